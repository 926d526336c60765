"""The one grammar of durations and instants: the forms it reads, the ones it refuses, its bounds,
and the round trip of everything it writes (property tests)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import QueryError
from pipeline.times import (
    MAX_DURATION_NS,
    MAX_INSTANT_NS,
    MIN_BARE_NS,
    NS,
    format_duration,
    format_instant,
    is_duration,
    is_relative,
    parse_duration,
    parse_instant,
    since_text,
    utc,
)

NOW = 1_796_000_000 * NS
T10 = 1_796_032_800 * NS  # 2026-11-30T10:00:00Z


@pytest.mark.parametrize(("text", "ns"), [
    ("90s", 90 * NS), ("1h30m", 5400 * NS), ("500ms", NS // 2), ("2d", 2 * 86400 * NS),
    ("1.5m", 90 * NS), ("2h15m30s", 8130 * NS), ("1m30s500ms", 90 * NS + NS // 2),
    ("250us", 250_000), ("7ns", 7), ("0s", 0), (" 5m ", 300 * NS),
    ("30", 30 * NS), ("0.25", NS // 4), (15, 15 * NS), (0.5, NS // 2), ("36500d", MAX_DURATION_NS),
])
def test_durations(text: str | int | float, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", [
    "30m1h", "5m5m", "1H", "-5s", "1e30", "10 min", "1h 30m", "", " ", "nan", "inf", "m",
    ".5s", "1.s", "5M", "1w", "\u0663s", "5\nm", "1" * 65, "36501d", float("nan"), float("inf"),
    -1, -0.5, 1e40, True, None, [5], b"5s",
])
def test_bad_durations_are_one_line_errors(text: object) -> None:
    with pytest.raises(QueryError) as err:
        parse_duration(text, "step")
    message = str(err.value)
    assert message.startswith("step: ") and "\n" not in message
    assert "duration" in message


@pytest.mark.parametrize(("text", "ns"), [
    ("now", NOW), ("now-15m", NOW - 900 * NS), ("-15m", NOW - 900 * NS),
    (" now-5m ", NOW - 300 * NS),
    ("now+30s", NOW + 30 * NS), ("now-1h30m", NOW - 5400 * NS), ("now-90", NOW - 90 * NS),
    ("2026-11-30T10:00:00Z", T10), ("2026-11-30t10:00:00z", T10),
    ("2026-11-30T11:00:00.5+01:00", T10 + NS // 2), ("2026-11-30T05:30:00-04:30", T10),
    ("2026-11-30 10:00Z", T10), ("2026-11-30T10:00:00.000000001Z", T10 + 1),
    ("@1796032800", T10), ("@1796032800.25", T10 + NS // 4),
    (str(T10), T10), (T10, T10),
    (datetime(2026, 11, 30, 11, tzinfo=timezone(timedelta(hours=1))), T10),
])
def test_instants(text: object, ns: int) -> None:
    assert parse_instant(text, NOW) == ns


@pytest.mark.parametrize(("text", "says"), [
    ("2026-11-30T10:00:00", "no time zone"), ("2026-11-30 10:00", "no time zone"),
    (datetime(2026, 11, 30, 10), "no time zone"), (date(2026, 11, 30), "a date, not an instant"),
    ("2026-11-30", "RFC 3339"), ("tomorrow", "RFC 3339"), ("2026-02-30T00:00Z", "not a valid"),
    ("2026-11-30T25:00Z", "not a valid"), ("2026-11-30T10:00+24:00", "not a valid"),
    ("2026-11-30T10:00:00.1234567890Z", "RFC 3339"), ("1796032800", "@1796032800"),
    ("1796032800000", "too small"), (1796032800, "@1796032800"),
    ("99999999999999999999999", "too far in the future"), ("2100-01-01T00:00:00Z", "future"),
    ("1969-12-31T23:59:59Z", "before 1970"), ("now-30000d", "before 1970"),
    ("now-36501d", "longest duration"), ("now-", "RFC 3339"), ("now-x", "after now-"),
    ("now - 5m", "RFC 3339"), ("now-5m\t1", "after now-"), ("@-5", "RFC 3339"),
    ("@1.1234567890", "RFC 3339"),
    ("\u0661\u0667\u0669\u0666" + "0" * 15, "RFC 3339"), (1.5e18, "RFC 3339"), (True, "RFC 3339"),
    (None, "RFC 3339"), ("x" * 100, "RFC 3339"),
])
def test_bad_instants_are_one_line_errors(text: object, says: str) -> None:
    with pytest.raises(QueryError) as err:
        parse_instant(text, NOW, "start")
    message = str(err.value)
    assert message.startswith("start: ") and "\n" not in message and says in message


def test_relative_instants_need_a_clock() -> None:
    assert parse_instant("2026-11-30T10:00:00Z", None) == T10
    for text in ("now", "now-5m", "-5m"):
        assert is_relative(text)
        with pytest.raises(QueryError, match="relative to the fabric's clock"):
            parse_instant(text, None)
    assert not is_relative("2026-11-30T10:00:00Z") and not is_relative(T10)


def test_since_is_a_duration_back_or_an_instant() -> None:
    assert since_text("15m") == "now-15m" and since_text("300") == "now-300"
    assert since_text("now-15m") == "now-15m"
    assert since_text("2026-11-30T10:00Z") == "2026-11-30T10:00Z"
    assert is_duration("1h30m") and not is_duration("now-1h") and not is_duration("")


def test_written_forms() -> None:
    assert format_duration(5400 * NS) == "1h30m" and format_duration(0) == "0s"
    assert format_duration(400 * 86400 * NS) == "400d"
    assert format_duration(185 * NS + 200_000_000, parts=2) == "3m5s"
    assert format_duration(3605 * NS, parts=2) == "1h"
    assert format_instant(T10) == "2026-11-30T10:00:00Z"
    assert format_instant(T10 + NS // 2) == "2026-11-30T10:00:00.5Z"
    assert format_instant(T10 + 999_999_999, digits=3) == "2026-11-30T10:00:00.999Z"
    assert format_instant(T10 + 999_999_999, digits=0) == "2026-11-30T10:00:00Z"
    assert utc(T10 + 999_999_999) == datetime(2026, 11, 30, 10, 0, 0, 999_999, tzinfo=UTC)


# --- properties ---

durations = st.integers(min_value=0, max_value=MAX_DURATION_NS)
instants = st.integers(min_value=0, max_value=MAX_INSTANT_NS - 1)


@given(durations)
def test_every_duration_round_trips(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns


@given(instants)
def test_every_instant_round_trips(ns: int) -> None:
    assert parse_instant(format_instant(ns), None) == ns
    if ns >= MIN_BARE_NS:
        assert parse_instant(str(ns), None) == ns


@given(instants, st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_any_zone_names_the_same_instant(ns: int, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    local = utc(ns).astimezone(zone)
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % NS:09d}" + local.strftime("%z")
    text = text[:-2] + ":" + text[-2:]
    assert parse_instant(text, None) == ns


@given(st.integers(min_value=MIN_BARE_NS, max_value=MAX_INSTANT_NS - 1), durations)
def test_relative_instants_are_now_minus_the_duration(now: int, back: int) -> None:
    text = f"now-{format_duration(back)}"
    if now - back >= 0:
        assert parse_instant(text, now) == now - back
    else:
        with pytest.raises(QueryError, match="before 1970"):
            parse_instant(text, now)


grammar_soup = st.text(alphabet="0123456789.:+-@ TtZzdhmsunow\n\u0663", max_size=40)


@given(st.one_of(grammar_soup, st.text(max_size=80), st.integers(), st.floats(),
                 st.none(), st.booleans()))
def test_any_input_is_a_value_or_our_own_error(value: object) -> None:
    for parse in (lambda: parse_duration(value, "d"), lambda: parse_instant(value, NOW, "t"),
                  lambda: parse_instant(value, None, "t")):
        try:
            result = parse()
        except QueryError as exc:
            assert "\n" not in str(exc)
        else:
            assert isinstance(result, int) and 0 <= result < max(MAX_INSTANT_NS,
                                                                 MAX_DURATION_NS + 1)


@pytest.mark.parametrize(("text", "says"), [
    ("30m1h", "want a duration back from now"), ("tomorrow", "or an instant"),
    ("99999999999", "longest duration"),
])
def test_since_refuses_what_is_neither(text: str, says: str) -> None:
    with pytest.raises(QueryError, match=r"^since: ") as err:
        since_text(text)
    assert says in str(err.value)
