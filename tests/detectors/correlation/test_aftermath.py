"""A storm's release gives starved receivers their usual load back: no incast of it
(:mod:`detectors.correlation.aftermath`)."""

from __future__ import annotations

from detectors.correlation.correlator import Correlator
from pipeline.model import Alert
from tests.detectors.correlation.test_correlator import WIDE, fan_in, frame_at, sym

#: host5 (leaf2:Ethernet1) stops draining: a storm
STORM = sym("pfc_watchdog", "leaf2:Ethernet1", pause_share=1.0, drain=0.0)
#: the same port draining again: the storm's finding lingers, but it holds nothing back
RELEASED = sym("pfc_watchdog", "leaf2:Ethernet1", pause_share=0.0, drain=0.8)


def habit(t: float) -> list[Alert]:
    """host9 (leaf3:Ethernet1) saturated as it has been since monitoring began."""
    return [sym("egress_oversubscribed", "leaf3:Ethernet1", t=t, util=0.97, habitual=1.0),
            sym("queue_buildup", "leaf3:Ethernet1", t=t, util=0.97)]


def returning(since: float, t: float) -> list[Alert]:
    """host9 saturated again by two held senders from ``since`` (the symptoms begin a second
    before), a saturation the rule judges new (its habit was forgotten while it was quiet)."""
    return [a.model_copy(update={"starts_ns": a.starts_ns + round((since - 10.0) * 1e9),
                                 "updated_ns": a.updated_ns + round((t - 10.0) * 1e9)})
            for a in fan_in(("leaf1:Ethernet1", 0.48), ("leaf2:Ethernet3", 0.5))]


def run(steps: list[tuple[float, list[Alert]]]) -> list[tuple[float, str, str]]:
    """The root causes of each step, as (time, kind, entity), one correlator throughout."""
    corr = Correlator(WIDE)
    out = []
    for t, symptoms in steps:
        out += [(t, a.name, a.entity) for a in corr.correlate(symptoms, frame_at(WIDE, t, 1.0))
                if a.root_cause]
    return out


def storm_then(return_at: float, *, habitual_before: bool = True,
               storm: bool = True) -> list[tuple[float, list[Alert]]]:
    """host9 habitual until 12 s; a storm on host5 from 11 s, draining again at 20 s; host9
    saturated again from ``return_at`` (the symptom begins a second before)."""
    steps: list[tuple[float, list[Alert]]] = []
    for t in range(10, 35):
        now: list[Alert] = []
        if t < 12 and habitual_before:
            now += habit(t)
        if storm and 11 <= t < 22:
            now.append(STORM if t < 20 else RELEASED)
        if t >= return_at:
            now += returning(return_at, t)
        steps.append((float(t), now))
    return steps


def incasts(found: list[tuple[float, str, str]]) -> list[float]:
    return [t for t, kind, entity in found if (kind, entity) == ("incast", "host9")]


def test_a_receiver_a_storm_starved_gets_its_load_back_without_an_incast() -> None:
    found = run(storm_then(21.0))
    assert ("pfc_storm", "host5") in {(k, e) for _, k, e in found}
    assert incasts(found) == []


def test_the_same_return_is_an_incast_without_the_storm_or_the_habit_or_when_late() -> None:
    # nothing held the receiver back: its habit ended on its own, and new load is new
    assert incasts(run(storm_then(21.0, storm=False)))[:1] == [21.0]
    # the port was not saturated before the storm: what floods it after is judged as new
    assert incasts(run(storm_then(21.0, habitual_before=False)))[:1] == [21.0]
    # back more than three intervals after the storm drained (20 s): not the load it took away
    assert incasts(run(storm_then(25.0)))[:1] == [25.0]


def test_a_habit_starved_then_back_is_new_again_once_its_return_has_ended() -> None:
    # the returning saturation ends at 26 s and comes back at 30 s: that one is judged as new
    steps = [(t, s if t < 26 else [] if t < 30 else returning(30.0, t))
             for t, s in storm_then(21.0)]
    assert incasts(run(steps))[:1] == [30.0]
