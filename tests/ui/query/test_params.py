"""Request parameters: times, durations, steps, point budgets and names."""

from __future__ import annotations

import pytest

from pipeline.errors import QueryError
from ui.query.params import (
    Limits,
    auto_step,
    check_name,
    check_points,
    parse_duration,
    parse_range,
    parse_step,
    parse_time,
)

NS = 1_000_000_000
NOW = 1_796_000_000 * NS


@pytest.mark.parametrize(("text", "ns"), [
    ("10s", 10 * NS), ("1.5m", 90 * NS), ("500ms", NS // 2), ("2h", 7200 * NS),
    ("1d", 86400 * NS), ("30", 30 * NS), (15, 15 * NS),
])
def test_durations(text: str | int, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(("text", "ns"), [
    (None, NOW), ("now", NOW), ("now-15m", NOW - 900 * NS), ("-1h", NOW - 3600 * NS),
    (str(NOW - 5), NOW - 5), ("2026-11-30T10:00:00Z", 1796032800 * NS),
    ("2026-11-30T11:00:00.5+01:00", 1796032800 * NS + NS // 2),
])
def test_times(text: str | None, ns: int) -> None:
    assert parse_time(text, NOW) == ns


def test_ranges_steps_and_budgets() -> None:
    limits = Limits(max_points=1000)
    rng = parse_range("now-1h", None, NOW, limits)
    assert (rng.start_ns, rng.end_ns) == (NOW - 3600 * NS, NOW)
    assert parse_range(None, None, NOW, limits).span_ns == 900 * NS
    assert auto_step(3600 * NS, limits) == 10 * NS
    assert parse_step(None, 86400 * NS, limits) == 300 * NS
    check_points(1000, 1, 10 * NS, limits)
    with pytest.raises(QueryError, match="use a step of at least 20s"):
        check_points(1000, 2, 10 * NS, limits)


@pytest.mark.parametrize(("value", "what"), [
    ("leaf1'", "device"), ("", "device"), ("a" * 64, "device"), ("leaf1 ", "device"),
    ("Eth\n1", "port"), ("x;y", "entity"), ("DROP TABLE", "name"),
    ("ABCDEF0123456789", "fingerprint"),
    ("leaf1\u200b", "device"),
])
def test_bad_names(value: str, what: str) -> None:
    with pytest.raises(QueryError, match=f"not a valid {what}"):
        check_name(value, what)


@pytest.mark.parametrize("name", ["leaf2~spine1#2", "leaf3:Ethernet5", "host12", "spine1"])
def test_fabric_names_are_entities(name: str) -> None:
    assert check_name(name, "entity") == name
