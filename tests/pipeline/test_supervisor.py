"""The one supervisor: a loop that raises is restarted under the retry policy, its health counts
restarts and crashes without progress, a stop ends a backoff wait at once, our errors are one log
line and bugs keep their traceback. Synchronised on events, never on elapsed time."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pipeline.errors import CollectorError, ConfigError
from pipeline.retry import RetryPolicy
from pipeline.supervisor import Supervisor

#: restarts at once (the waits are below a millisecond)
QUICK = RetryPolicy(initial_s=0.0005, cap_s=0.001)
#: a restart would come an hour later
SLOW = RetryPolicy(initial_s=3600.0, cap_s=3600.0)
#: long enough for a test to find a join that does not end
JOIN_S = 30.0


class Script:
    """A loop that fails ``failures`` times (each failure may first make ``progress``), then
    runs until stopped."""

    def __init__(self, failures: list[Exception], progress: list[bool] | None = None) -> None:
        self.failures = list(failures)
        self.progress = list(progress or [])
        self.calls = 0
        self.made = 0
        self.running = threading.Event()
        self.called = threading.Event()

    def __call__(self, stop: threading.Event) -> None:
        self.calls += 1
        self.called.set()
        if self.failures:
            if self.progress and self.progress.pop(0):
                self.made += 1
            raise self.failures.pop(0)
        self.running.set()
        stop.wait()


def supervise(loop: Callable[[threading.Event], None], policy: RetryPolicy = QUICK,
              **kw: Any) -> tuple[Supervisor, threading.Event]:
    stop = threading.Event()
    sup = Supervisor("test loop", loop, stop, policy=policy, rng=random.Random(0), **kw)
    return sup.start(), stop


def test_a_loop_that_raises_is_restarted_and_counted() -> None:
    script = Script([CollectorError("target away")] * 3)
    sup, stop = supervise(script)
    try:
        assert script.running.wait(JOIN_S), "the loop was not restarted"
        health = sup.health()
        assert health == {"alive": True, "restarts": 3,
                          "last_error": "CollectorError: target away",
                          "crashes_without_progress": 3, "crash_looping": True}
        assert script.calls == 4
    finally:
        stop.set()
    assert sup.join(JOIN_S) and not sup.health()["alive"]


def test_progress_between_crashes_resets_the_count() -> None:
    script = Script([ValueError("poison")] * 4, progress=[False, False, True, False])
    sup, stop = supervise(script, progress=lambda: script.made)
    try:
        assert script.running.wait(JOIN_S)
        # no, no, yes (the count starts over), no
        assert sup.health()["crashes_without_progress"] == 1 and sup.restarts == 4
    finally:
        stop.set()
    assert sup.join(JOIN_S)


def test_the_same_poison_again_and_again_is_counted_as_stalled() -> None:
    script = Script([ValueError("poison")] * 5, progress=[False] * 5)
    sup, stop = supervise(script, progress=lambda: script.made)
    try:
        assert script.running.wait(JOIN_S)
        assert sup.health()["crashes_without_progress"] == 5
    finally:
        stop.set()
    assert sup.join(JOIN_S)


@pytest.mark.parametrize(("crashes", "looping"), [(2, False), (3, True), (6, True)])
def test_crashes_in_a_row_without_progress_make_a_loop_crash_looping(crashes: int,
                                                                    looping: bool) -> None:
    script = Script([ValueError("poison")] * crashes, progress=[False] * crashes)
    sup, stop = supervise(script, progress=lambda: script.made)
    try:
        assert script.running.wait(JOIN_S)
        assert sup.crash_looping is looping and sup.health()["crash_looping"] is looping
    finally:
        stop.set()
    assert sup.join(JOIN_S)


def test_a_crash_looping_loop_that_makes_progress_while_it_runs_is_over_it() -> None:
    made = [0]
    script = Script([ValueError("poison")] * 4)
    sup, stop = supervise(script, progress=lambda: made[0])
    try:
        assert script.running.wait(JOIN_S)
        assert sup.check() is True and sup.stalled == 4  # running, but nothing done yet
        made[0] += 1  # the restarted loop stores something
        assert sup.check() is False
        assert sup.health()["crashes_without_progress"] == 0
    finally:
        stop.set()
    assert sup.join(JOIN_S)


def test_without_a_probe_a_run_as_long_as_the_reset_is_progress() -> None:
    now = [0.0]
    script = Script([ValueError("poison")] * 3)
    sup, stop = supervise(script, clock=lambda: now[0])
    try:
        assert script.running.wait(JOIN_S)
        assert sup.check() is True
        now[0] += QUICK.reset_after_s - 1
        assert sup.check() is True
        now[0] += 1
        assert sup.check() is False and sup.stalled == 0
    finally:
        stop.set()
    assert sup.join(JOIN_S)


def test_a_broken_progress_probe_does_not_end_supervision() -> None:
    def probe() -> int:
        raise RuntimeError("probe bug")

    script = Script([ValueError("x")] * 2)
    sup, stop = supervise(script, progress=probe)
    try:
        assert script.running.wait(JOIN_S)
        assert sup.restarts == 2 and sup.stalled == 2
    finally:
        stop.set()
    assert sup.join(JOIN_S)


def test_stop_ends_a_backoff_wait_at_once() -> None:
    script = Script([CollectorError("down")])
    sup, stop = supervise(script, policy=SLOW)
    assert script.called.wait(JOIN_S)
    stop.set()
    # the restart was an hour away: the thread ends only because the stop cut the wait
    assert sup.join(JOIN_S), "the supervisor kept waiting after the stop"
    assert script.calls == 1 and sup.restarts == 1


def test_a_loop_that_returns_is_done() -> None:
    done = threading.Event()
    sup, stop = supervise(lambda stop: done.set())
    assert sup.join(JOIN_S) and done.is_set()
    assert sup.health()["restarts"] == 0 and not stop.is_set()


def test_the_policy_budget_ends_supervision() -> None:
    script = Script([ValueError("x")] * 5)
    sup, _ = supervise(script, policy=RetryPolicy(initial_s=0.0005, cap_s=0.001,
                                                  max_attempts=2))
    assert sup.join(JOIN_S)
    assert script.calls == 2 and sup.restarts == 2 and not sup.alive


def test_our_errors_are_one_line_and_bugs_keep_their_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    script = Script([ConfigError("targets file missing", "collectors[0].targets"),
                     KeyError("bug")])
    with caplog.at_level(logging.ERROR, logger="rocewatch.test"):
        sup, stop = supervise(script, logger=logging.getLogger("rocewatch.test"))
        try:
            assert script.running.wait(JOIN_S)
        finally:
            stop.set()
        assert sup.join(JOIN_S)
    ours, bug = [r for r in caplog.records if r.name == "rocewatch.test"]
    assert "test loop failed: collectors[0].targets: targets file missing" in ours.getMessage()
    assert "restarting in" in ours.getMessage() and ours.exc_info is None
    assert "test loop crashed" in bug.getMessage()
    assert bug.exc_info is not None and bug.exc_info[0] is KeyError
