"""Per-target health intervals: counted by the device's own times, closed by its own data, and
only silence judged on the fabric's clock (issue 10.1)."""

from __future__ import annotations

import random

from collectors.clocks import DeviceClock, FabricClock
from collectors.health import TargetHealth
from pipeline.model import BatchBuilder

T0 = 1_800_000_000_000_000_000
S = 1_000_000_000


def make(fabric: FabricClock | None = None, name: str = "leaf1", **kw: object) -> TargetHealth:
    return TargetHealth(name, "gnmi", "x:1", "openconfig", 1.0, DeviceClock(),
                        fabric or FabricClock(hold_s=1.5), **kw)  # type: ignore[arg-type]


def connected_pair(first: str, second: str) -> tuple[TargetHealth, TargetHealth]:
    """Two connected targets of one collector (one fabric clock), expecting 10 series each."""
    fabric = FabricClock(hold_s=1.5)
    pair = make(fabric, first), make(fabric, second)
    for h in pair:
        h.session_started(0.0)
        h.expected = 10
    return pair


def drained(health: TargetHealth) -> list[dict[str, float]]:
    """The closed intervals as {metric: value, "ts": end}."""
    builder = BatchBuilder()
    health.drain(builder)
    out: dict[int, dict[str, float]] = {}
    for ts, _dev, _port, metric, _q, value, _f in builder.build().rows():
        out.setdefault(ts, {"ts": float(ts)})[metric] = value
    return [out[k] for k in sorted(out)]


def test_late_and_bursty_delivery_never_reads_as_a_short_interval() -> None:
    """A device sampled every second whose notifications reach the collector late, in bursts
    of up to three intervals (a lab behind its schedule at speed): every interval it delivered
    is counted whole."""
    health = make()
    health.session_started(0.0)
    health.expected = 100
    rng = random.Random(7)
    wall, k = 0.0, 0
    while k < 60:
        burst = rng.randint(1, 3)
        wall += burst * rng.uniform(0.2, 1.8)  # arrivals have nothing to do with the schedule
        for _ in range(burst):
            health.note_data(100, T0 + k * S, wall)
            k += 1
        health.tick(wall)
    rows = drained(health)
    assert len(rows) >= 55
    assert all(r["collector_received"] == 100 and r["collector_up"] == 1 for r in rows), rows
    # each interval's sample is stamped at its end: after its data, never before
    assert [int(r["ts"]) for r in rows] == [T0 + k * S + S // 2 for k in range(len(rows))]


def test_a_reconnect_that_shifts_the_phase_is_not_a_short_interval() -> None:
    health = make()
    health.session_started(0.0)
    for k in range(5):
        health.note_data(10, T0 + k * S, float(k))
    # the new session's schedule starts 0.9 s after the old one's last sample
    health.session_ended()
    health.session_started(5.0)
    for k in range(5):
        health.note_data(10, T0 + 4 * S + 9 * S // 10 + k * S, 5.0 + k)
    rows = drained(health)
    assert [r["collector_received"] for r in rows] == [10.0] * len(rows)
    assert len(rows) == 9  # every sample but the newest (its interval is still open)


def test_silence_is_judged_on_the_other_targets_time() -> None:
    quiet, busy = connected_pair("quiet", "busy")
    for k in range(4):
        quiet.note_data(10, T0 + k * S, float(k))
        busy.note_data(10, T0 + k * S, float(k))
    drained(quiet)
    # quiet froze after its sample at 3 s; busy goes on
    for k in range(4, 8):
        busy.note_data(10, T0 + k * S, float(k))
        quiet.tick(float(k))
    rows = drained(quiet)
    # the interval ending at 3.5 s (holding the sample at 3 s) closes once the fabric is a
    # quarter interval past it, the one ending 4.5 s at 4.75 s, ... 6.5 s at 6.75 s (7.5 s waits)
    assert [(r["ts"] - T0) / S for r in rows] == [3.5, 4.5, 5.5, 6.5]
    assert [r["collector_received"] for r in rows] == [10.0, 0.0, 0.0, 0.0]
    # a stopped fabric (no target newer) stops the judgement: nobody is called silent for it
    quiet2 = make(FabricClock(hold_s=100.0), "alone")
    quiet2.session_started(0.0)
    quiet2.note_data(10, T0, 0.0)
    quiet2.tick(50.0)
    assert drained(quiet2) == []


def test_a_target_that_is_always_late_is_not_silent_for_it() -> None:
    late, busy = connected_pair("late", "busy")
    for k in range(30):
        busy.note_data(10, T0 + k * S, float(k))
        late.tick(float(k))
        if k >= 3:  # the late target's data for k - 3 arrives with the fabric at k
            late.note_data(10, T0 + (k - 3) * S, float(k))
        late.tick(float(k))
    rows = drained(late)
    assert rows and all(r["collector_received"] == 10.0 for r in rows), rows


def test_a_target_never_heard_is_down_once_its_grace_passed() -> None:
    fabric = FabricClock(hold_s=1.5)
    fabric.observe(T0, 0.0)
    health = make(fabric, connect_grace_s=2.0)
    health.tick(0.0)
    health.tick(2.9)
    assert drained(health) == []  # connecting: neither up nor down
    for wall in (4.0, 5.0, 6.0, 7.0, 8.0):
        health.tick(wall)
    rows = drained(health)
    assert rows and all(r["collector_up"] == 0 for r in rows)
    assert health.state(8.0) in ("down", "connecting")


def test_a_target_whose_data_maps_to_nothing_is_not_up() -> None:
    health = make()
    health.session_started(0.0)
    for k in range(3):
        health.note_message(float(k))
        health.note_data(0, T0 + k * S, float(k))
    assert health.state(3.0) == "no_mapped_data"
    assert not health.snapshot(3.0)["up"]
    rows = drained(health)
    assert rows and all(r["collector_up"] == 0 for r in rows)
