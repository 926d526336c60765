"""How the read side writes event times for people: clock time, date and time, age (UTC).

Dates and ages are written in the platform's one grammar (:mod:`pipeline.times`): a date and time
from a table can be pasted back as ``--at``/``--start``, an age as ``--since``.
"""

from __future__ import annotations

from pipeline.times import NS, format_duration, format_instant, utc


def clock_time(ns: int | None) -> str:
    """``10:46:04 UTC``: the time of day, for a clock that shows the date elsewhere."""
    if not ns:
        return "—"
    return utc(ns).strftime("%H:%M:%S UTC")


def date_time(ns: int | None) -> str:
    """``2026-11-30T10:46:04Z``: RFC 3339 in UTC, to the second."""
    if not ns:
        return "—"
    return format_instant(ns, digits=0)


def age(ns: int | None, now_ns: int) -> str:
    """``3m5s`` between an event and the fabric's clock: its two largest units, to the second."""
    if not ns:
        return "—"
    seconds = max(0, (now_ns - ns) // NS)
    return format_duration(seconds * NS, parts=2)
