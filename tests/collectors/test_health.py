"""Per-target health: a target still connecting is neither up nor down; a silent one is down."""

from __future__ import annotations

from collectors.health import DeviceClock, TargetHealth
from pipeline.model import BatchBuilder


def clock() -> DeviceClock:
    """A device clock known from the start (the lab's or a neighbour's), at wall 0."""
    c = DeviceClock()
    c.observe(1_800_000_000_000_000_000, 0.0)
    return c


def health_rows(health: TargetHealth, wall: float) -> dict[str, float]:
    builder = BatchBuilder()
    if health.due(wall):
        health.tick(builder, wall)
    return {r[3]: r[5] for r in builder.build().rows()}


def test_connecting_is_not_down_until_the_grace_passes() -> None:
    health = TargetHealth("leaf1", "gnmi", "x:1", "openconfig", 1.0, clock(),
                          connect_grace_s=2.0)
    assert health_rows(health, 0.0) == {}        # first call only arms the interval
    assert health_rows(health, 1.1) == {}        # one interval in, still connecting: nothing
    assert health_rows(health, 2.2) == {}        # grace is at least 3 stale intervals
    assert health_rows(health, 3.3)["collector_up"] == 0.0  # grace over, never heard: down


def test_data_reports_up_at_once() -> None:
    health = TargetHealth("leaf1", "gnmi", "x:1", "openconfig", 1.0, clock(),
                          connect_grace_s=30.0)
    health_rows(health, 0.0)
    health.connected = True
    health.note_data(100, 1_800_000_000_500_000_000, 0.5)
    rows = health_rows(health, 1.1)
    assert rows["collector_up"] == 1.0 and rows["collector_received"] == 100.0
    # silent for longer than stale_intervals: down, grace or not
    assert health_rows(health, 5.0)["collector_up"] == 0.0
