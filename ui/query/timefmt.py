"""How the read side writes event times for people: clock time, date and time, age (UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def clock_time(ns: int | None) -> str:
    if not ns:
        return "—"
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%H:%M:%S UTC")


def date_time(ns: int | None) -> str:
    if not ns:
        return "—"
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def age(ns: int | None, now_ns: int) -> str:
    """``3m 05s`` between an event and the fabric's clock."""
    if not ns:
        return "—"
    seconds = max(0, (now_ns - ns) // 1_000_000_000)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600}h"
