"""Validated read-side request parameters: names, times, ranges, steps and limits.

Everything a person or a program asks the query layer for passes through here before any SQL is
built; a value that does not fit raises :class:`pipeline.errors.QueryError` with a message saying
what was wrong and what to send instead. Values that reach SQL are then spelled only by
:func:`pipeline.store.base.literal`.

Times are accepted as integer nanoseconds since the epoch, RFC 3339 (``2026-11-30T10:00:00Z``), or
relative to the fabric's clock: ``now``, ``now-15m``, ``-15m``. The fabric's clock is the newest
event time in the store (see :mod:`ui.query.clock`), not this process's wall clock: a lab replaying
at
``--speed`` or a store being back-filled still answers "the last 15 minutes" correctly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from pipeline.errors import QueryError
from pipeline.metrics import CATALOG, METRIC_ID, Kind, Metric

NS = 1_000_000_000

_UNITS_NS = {"ms": 1_000_000, "s": NS, "m": 60 * NS, "h": 3600 * NS, "d": 86400 * NS}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$")
_RELATIVE = re.compile(r"^(?:now)?(?:-(\d+(?:\.\d+)?(?:ms|s|m|h|d)))?$")

_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_PORT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,62}$")
_ENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/~#-]{0,127}$")
_ALERT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_FINGERPRINT = re.compile(r"^[0-9a-f]{16}$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")

#: ns timestamps before this are almost certainly seconds or milliseconds sent by mistake
_MIN_NS = 10**17  # 1973-03-03
_MAX_NS = 4 * 10**18  # 2096


@dataclass(frozen=True)
class Limits:
    """The bounds every request is checked against."""

    max_points: int = 20_000
    max_range_ns: int = 400 * 86400 * NS
    #: the longest range read from raw samples (longer ones come from the rollups)
    max_raw_range_ns: int = 3 * 86400 * NS
    #: with source=auto, ranges up to this long are read from raw samples
    raw_auto_span_ns: int = 6 * 3600 * NS
    #: raw samples older than this are gone (the store's retention): read the rollups
    raw_retention_ns: int = 14 * 86400 * NS
    min_step_ns: int = NS // 10
    max_step_ns: int = 86400 * NS
    max_rows: int = 5_000
    #: how many buckets a series aims for when the caller gives no step
    target_points: int = 360


def parse_duration(text: str | int | float, what: str = "duration") -> int:
    """``10s``, ``1.5m``, ``500ms``, ``2h``, ``1d``, or a bare number of seconds → ns."""
    if isinstance(text, bool):
        raise QueryError(f"{what}: want a duration like 10s, 5m, 1h; got {text!r}")
    if isinstance(text, (int, float)):
        seconds = float(text)
        if not 0 < seconds < 10**8:
            raise QueryError(f"{what}: {text!r} seconds is out of range")
        return round(seconds * NS)
    match = _DURATION.match(text.strip())
    if not match:
        raise QueryError(f"{what}: want a duration like 10s, 5m, 1h, 500ms; got {_show(text)}")
    ns = round(float(match.group(1)) * _UNITS_NS[match.group(2) or "s"])
    if ns <= 0:
        raise QueryError(f"{what}: must be positive, got {_show(text)}")
    return ns


def parse_time(text: str | int | None, now_ns: int, what: str = "time") -> int:
    """One point in time → ns since the epoch (see the module docstring for the forms)."""
    if text is None:
        return now_ns
    if isinstance(text, bool):
        raise QueryError(f"{what}: not a time: {text!r}")
    if isinstance(text, int):
        return _check_ns(text, what)
    raw = text.strip()
    if raw.lstrip("-").isdigit():
        return _check_ns(int(raw), what)
    rel = _RELATIVE.match(raw)
    if rel and raw:
        back = rel.group(1)
        return now_ns - (parse_duration(back, what) if back else 0)
    try:
        stamp = datetime.fromisoformat(raw)
    except ValueError:
        raise QueryError(f"{what}: want ns since the epoch, RFC 3339 (2026-11-30T10:00:00Z) or "
                         f"now-15m; got {_show(raw)}") from None
    if stamp.tzinfo is None:
        raise QueryError(f"{what}: {_show(raw)} has no time zone; add Z for UTC")
    seconds = int(stamp.timestamp())
    return seconds * NS + stamp.microsecond * 1000


def _check_ns(value: int, what: str) -> int:
    if value < _MIN_NS:
        raise QueryError(f"{what}: {value} is not nanoseconds since the epoch (too small: "
                         f"seconds or milliseconds?); send ns or RFC 3339")
    if value > _MAX_NS:
        raise QueryError(f"{what}: {value} is too far in the future")
    return value


@dataclass(frozen=True)
class TimeRange:
    start_ns: int
    end_ns: int

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns


def parse_range(start: str | int | None, end: str | int | None, now_ns: int, limits: Limits,
                default_span_ns: int = 15 * 60 * NS) -> TimeRange:
    """A ``[start, end]`` range (both ends included); end defaults to now, start to
    ``default_span_ns`` before end."""
    end_ns = parse_time(end, now_ns, "end")
    start_ns = end_ns - default_span_ns if start is None else parse_time(start, now_ns, "start")
    if start_ns >= end_ns:
        raise QueryError(f"start ({start}) must be before end ({end or 'now'})")
    if end_ns - start_ns > limits.max_range_ns:
        raise QueryError(f"the range spans {human(end_ns - start_ns)}; the limit is "
                         f"{human(limits.max_range_ns)}: ask for a shorter range")
    return TimeRange(start_ns, end_ns)


def parse_step(step: str | int | float | None, span_ns: int, limits: Limits) -> int:
    """The bucket width in ns; without one, a round width giving about ``target_points``."""
    if step is None or step == "":
        return auto_step(span_ns, limits)
    ns = parse_duration(step, "step")
    if ns < limits.min_step_ns:
        raise QueryError(f"step {_show(step)} is below the minimum {human(limits.min_step_ns)}")
    if ns > limits.max_step_ns:
        raise QueryError(f"step {_show(step)} is above the maximum {human(limits.max_step_ns)}")
    return ns


_ROUND_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
                  43200, 86400)


def auto_step(span_ns: int, limits: Limits) -> int:
    want = span_ns / max(1, limits.target_points)
    for seconds in _ROUND_STEPS_S:
        if seconds * NS >= want:
            return seconds * NS
    return _ROUND_STEPS_S[-1] * NS


def check_points(buckets: int, series: int, step_ns: int, limits: Limits) -> None:
    """Refuse a request whose answer would exceed ``max_points``, naming a step that fits."""
    total = buckets * max(1, series)
    if total <= limits.max_points:
        return
    per_series = max(1, limits.max_points // max(1, series))
    suggested = step_ns * -(-buckets // per_series)
    raise QueryError(f"this asks for {total} points ({buckets} steps x {series} series); the limit "
                     f"is {limits.max_points}: use a step of at least {human(suggested)} or a "
                     f"shorter range")


def check_metric(name: str) -> Metric:
    if name not in METRIC_ID:
        raise QueryError(f"unknown metric {_show(name)}; known metrics: "
                         f"{', '.join(m.name for m in CATALOG)}")
    return CATALOG[METRIC_ID[name]]


def check_qual(value: int | str | None, metric: Metric) -> int | None:
    """A PFC priority (0-7) or queue index (0-63) for a metric that has one; None means all."""
    if value is None or value == "":
        return None
    try:
        qual = int(value)
    except (TypeError, ValueError):
        raise QueryError(f"qual: want an integer, got {_show(value)}") from None
    if metric.qualifier is None:
        raise QueryError(f"metric {metric.name} has no priority or queue; drop qual")
    top = 7 if metric.qualifier == "priority" else 63
    if not 0 <= qual <= top:
        raise QueryError(f"qual: a {metric.qualifier} of {metric.name} is 0..{top}, got {qual}")
    return qual


def check_name(value: str, what: str) -> str:
    """A device, port, entity, alert name, fingerprint or plain word, by ``what``."""
    pattern = {"device": _DEVICE, "port": _PORT, "entity": _ENTITY, "name": _ALERT_NAME,
               "fingerprint": _FINGERPRINT}.get(what, _WORD)
    if not isinstance(value, str) or not pattern.match(value):
        hint = {
            "device": "letters, digits, . _ - (like leaf3)",
            "port": "letters, digits, . _ - : / (like Ethernet5)",
            "entity": "a switch, host, port (leaf3:Ethernet5) or link (leaf3~spine2)",
            "name": "an alert name like pfc_storm",
            "fingerprint": "16 lowercase hex digits",
        }.get(what, "letters, digits, . _ -")
        raise QueryError(f"{what}: {_show(value)} is not a valid {what}: want {hint}")
    return value


def check_choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise QueryError(f"{what}: {_show(value)} is not one of {', '.join(allowed)}")
    return value


def check_limit(value: int | None, limits: Limits, default: int = 500) -> int:
    if value is None:
        return min(default, limits.max_rows)
    if not 1 <= value <= limits.max_rows:
        raise QueryError(f"limit: {value} is outside 1..{limits.max_rows}")
    return value


def is_counter(metric: Metric) -> bool:
    return metric.kind is Kind.COUNTER


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def human(ns: int) -> str:
    seconds = ns / NS
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    if seconds >= 1:
        return f"{seconds:g}s"
    return f"{round(ns / 1_000_000)}ms"
