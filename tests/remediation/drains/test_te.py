"""The TE client under the retry policy, against a real loopback controller that is busy, rate
limits or is away: a runbook step never waits for it, asks again on a later tick once the
policy's wait (or the controller's ``Retry-After``) is over, and fails the way it always did once
the tries are spent; a rollback the controller cannot take at once is owed until it can."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterator

import pytest

from pipeline.errors import RemediationError
from remediation.drains.runs import Phase
from remediation.drains.te import HttpTe, TeRetryLater
from remediation.settings import TeSettings
from tests.remediation.gnmi_target import Targets
from tests.remediation.rig import Rig, fabric, settings
from tests.remediation.support import make_alert
from tests.remediation.te_controller import TeController

LINK = "leaf2~spine1"


class Clock:
    """The TE client's clock, moved by hand: nothing here sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def peers() -> Iterator[tuple[Targets, TeController]]:
    targets = Targets(fabric())
    te = TeController(targets.fabric.topology).start()
    yield targets, te
    te.stop()
    targets.stop()


Build = Callable[..., tuple[Rig, TeController, Clock]]


@pytest.fixture
def rig(peers: tuple[Targets, TeController]) -> Build:
    def build(attempts: int = 3) -> tuple[Rig, TeController, Clock]:
        targets, te = peers
        clock = Clock()
        client = HttpTe(te.url, TeSettings(attempts=attempts, timeout=3), clock=clock,
                        rng=random.Random(7))
        return Rig(targets.fabric.topology, targets, te.url, settings(), te=client), te, clock
    return build


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_busy_controller_is_asked_again_after_its_retry_after_not_waited_for(rig: Build,
                                                                               ) -> None:
    r, te, clock = rig()
    te.script = [(503, {"Retry-After": "2"})]
    r.alerts(make_alert(entity=LINK))
    r.tick(10)  # confirmed; the announce meets a busy controller and the tick goes on
    run = r.drainer.active[LINK]
    assert run.phase == Phase.TE_PRE and len(te.requests) == 1
    clock.now += 1.5
    r.tick(10.25)  # the controller asked for 2 s: no request yet
    assert run.phase == Phase.TE_PRE and len(te.requests) == 1
    clock.now += 1.0
    r.tick(10.5)
    assert run.phase == Phase.VERIFY_TRAFFIC and te.calls() == [
        ("POST", f"/v1/links/{LINK}/drain")] * 2
    assert te.drained == {LINK}
    assert "TE controller told before the drain" in r.records("drain")[-1].detail


def test_a_rate_limit_beyond_the_cap_waits_the_cap(rig: Build) -> None:
    r, te, clock = rig()
    te.script = [(429, {"Retry-After": "3600"})]
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    clock.now += 29.0
    r.tick(11)
    assert len(te.requests) == 1
    clock.now += 1.5  # past the policy's 30 s cap
    r.tick(12)
    assert len(te.requests) == 2 and r.drainer.active[LINK].phase == Phase.VERIFY_TRAFFIC


def test_when_the_tries_are_spent_the_drain_fails_with_nothing_touched(rig: Build) -> None:
    r, te, clock = rig(attempts=3)
    te.script = [(503, {})] * 3
    r.alerts(make_alert(entity=LINK))
    t = 10.0
    while LINK in r.drainer.active and t < 20:
        r.tick(t)
        clock.now += 2.0  # past the waits of a short streak, well within one streak
        t += 0.25
    assert len(te.requests) == 3 and LINK not in r.drainer.active
    last = r.records("drain")[-1]
    assert last.outcome == "failed" and "nothing touched" in last.detail
    assert "after 3 attempt(s)" in last.detail and r.targets.fabric.sets == []


def test_a_rollback_the_controller_cannot_take_now_is_owed_until_it_can(rig: Build) -> None:
    r, te, clock = rig()
    link = r.topology.link_by_id[LINK]
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    assert te.drained == {LINK}
    te.script = [(503, {"Retry-After": "5"})]
    for t in range(11, 45, 2):  # traffic never leaves: the run aborts and rolls back
        r.traffic(t, link.ends(), 300.0, dt=2)
        r.tick(t)
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.FAILED and "TE not told yet" in r.records("drain")[-1].detail
    assert te.drained == {LINK} and LINK in r.drainer.steps.owed
    r.tick(46)
    assert len(te.requests) == 2  # not before the controller's 5 s
    clock.now += 5.5
    r.tick(47)
    assert te.drained == set() and not r.drainer.steps.owed
    assert te.calls()[-1] == ("POST", f"/v1/links/{LINK}/undrain")
    last = r.records("drain")[-1]
    assert last.outcome == "done" and "TE told to keep the link" in last.detail


def test_an_unreachable_controller_raises_retry_later_then_fails() -> None:
    clock = Clock()
    client = HttpTe(f"http://127.0.0.1:{free_port()}", TeSettings(attempts=2, timeout=2),
                    clock=clock, rng=random.Random(1))
    try:
        with pytest.raises(TeRetryLater, match="ConnectError") as first:
            client.restore(LINK)
        wait = first.value.retry_in_s
        assert 0 <= wait <= client.policy.initial_s
        with pytest.raises(TeRetryLater, match="trying again"):  # its wait is not over
            client.restore(LINK)
        clock.now += wait + 0.01
        with pytest.raises(RemediationError, match=r"after 2 attempt\(s\)") as final:
            client.restore(LINK)
        assert not isinstance(final.value, TeRetryLater)
    finally:
        client.close()


def test_a_refusal_is_not_retried(rig: Build) -> None:
    r, te, _ = rig()
    te.refuse.add(LINK)
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    assert len(te.requests) == 1 and LINK not in r.drainer.active
    assert "409" in r.records("drain")[-1].detail


def test_the_drained_links_are_asked_for_and_picked_out_of_a_full_list(rig: Build) -> None:
    """The client asks for the drained links only; a controller that lists every link anyway
    (this one ignores the query) is read the same."""
    r, te, _ = rig()
    te.drained |= {LINK, "leaf1~spine2"}
    drained = r.te.drains()
    assert sorted(drained) == ["leaf1~spine2", LINK]
    assert te.calls()[-1] == ("GET", "/v1/state?links=drained")
