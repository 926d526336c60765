"""Validated read-side request parameters: names, times, ranges, steps and limits.

Everything a person or a program asks the query layer for passes through here before any SQL is
built; a value that does not fit raises :class:`pipeline.errors.QueryError` with a message saying
what was wrong and what to send instead. Values that reach SQL are then spelled only by
:func:`pipeline.store.base.literal`.

Durations and instants are read in the platform's one grammar (:mod:`pipeline.times`,
``docs/time.md``): ``90s``, ``1h30m`` or bare seconds; RFC 3339 with a zone, ``now-15m``,
``@<Unix seconds>`` or ns. Relative times are taken from the fabric's clock, the newest event
time in the store (see :mod:`ui.query.clock`), not this process's wall clock: a lab replaying at
``--speed`` or a store being back-filled still answers "the last 15 minutes" correctly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pipeline.config import ApiSettings, StoreSettings
from pipeline.errors import QueryError
from pipeline.metrics import CATALOG, METRIC_ID, Kind, Metric
from pipeline.store.base import rollup_retention
from pipeline.times import format_duration, parse_instant
from pipeline.times import parse_duration as parse_span

NS = 1_000_000_000
DAY_NS = 86400 * NS

# whole-string patterns (``fullmatch``: a ``$`` would let a trailing newline through), ASCII only
_DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", re.ASCII)
_PORT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,62}", re.ASCII)
_ENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/~#-]{0,127}", re.ASCII)
_ALERT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}", re.ASCII)
_FINGERPRINT = re.compile(r"[0-9a-f]{16}", re.ASCII)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}", re.ASCII)

#: how a request's durations are written back in its messages: the grammar's own form
human = format_duration


def _kept_ns(store: StoreSettings) -> dict[str, int]:
    """How long the store keeps each rollup, by rollup name."""
    return {name: days * DAY_NS for name, days in rollup_retention(store).items()}


@dataclass(frozen=True)
class Limits:
    """The bounds every request is checked against; what the store keeps comes from its settings
    (:meth:`for_store`), the defaults are those of a store with the default settings."""

    max_points: int = 20_000
    max_range_ns: int = 400 * 86400 * NS
    #: the longest range read from raw samples (longer ones come from the rollups)
    max_raw_range_ns: int = 3 * 86400 * NS
    #: with source=auto, ranges up to this long are read from raw samples
    raw_auto_span_ns: int = 6 * 3600 * NS
    #: raw samples, alerts and actions older than this are gone (``store.retention_days``):
    #: samples are read from the rollups, alerts and actions are refused
    raw_retention_ns: int = StoreSettings().retention_days * DAY_NS
    #: how long each rollup keeps its buckets, by rollup name (``store.rollup_1m_days``, ...)
    rollup_retention_ns: Mapping[str, int] = field(
        default_factory=lambda: _kept_ns(StoreSettings()))
    min_step_ns: int = NS // 10
    max_step_ns: int = 86400 * NS
    max_rows: int = 5_000
    #: how many buckets a series aims for when the caller gives no step
    target_points: int = 360

    @classmethod
    def for_store(cls, store: StoreSettings, api: ApiSettings | None = None) -> Limits:
        """The bounds of an API over a store configured by ``store``: nothing older than the store
        keeps may be asked for; ``api`` sets the point budget."""
        limits = cls(raw_retention_ns=store.retention_days * DAY_NS,
                     rollup_retention_ns=_kept_ns(store))
        return limits if api is None else replace(limits, max_points=api.max_points)


def check_kept(start_ns: int, now_ns: int, limits: Limits, what: str,
               rollup: str | None = None) -> None:
    """Refuse a request that starts before the oldest data the store keeps of ``what`` (raw
    rows, or the named rollup's buckets): an empty answer there would be a wrong answer."""
    kept_ns = limits.raw_retention_ns if rollup is None else limits.rollup_retention_ns[rollup]
    if start_ns < now_ns - kept_ns:
        raise QueryError(f"the request reaches {(now_ns - start_ns) / DAY_NS:.1f} days back; the "
                         f"store keeps {what} for {human(kept_ns)}: ask for a later time")


def parse_duration(text: str | int | float, what: str = "duration") -> int:
    """A request's duration (``10s``, ``1h30m``, bare seconds) → ns; it must be longer than zero."""
    ns = parse_span(text, what)
    if ns <= 0:
        raise QueryError(f"{what}: must be positive (longer than zero), got {_show(text)}")
    return ns


def parse_time(text: str | int | None, now_ns: int, what: str = "time") -> int:
    """A request's instant → ns since the epoch; none given is now (the fabric's clock)."""
    return now_ns if text is None else parse_instant(text, now_ns, what)


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
    if not isinstance(value, str) or not pattern.fullmatch(value):
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
