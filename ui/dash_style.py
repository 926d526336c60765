"""The dashboard's visual vocabulary: level colours, badges, and how times are written."""

from __future__ import annotations

import html
from datetime import UTC, datetime

from ui.views import LEVELS, Level

COLOURS: dict[str, str] = {
    "critical": "#d62728",
    "warning": "#f28e2b",
    "info": "#4e79a7",
    "nodata": "#9e9e9e",
    "ok": "#59a14f",
}
ICONS: dict[str, str] = {"critical": "🔴", "warning": "🟠", "info": "🔵", "nodata": "⚪",
                         "ok": "🟢"}
LABELS: dict[str, str] = {"critical": "critical", "warning": "warning", "info": "info",
                          "nodata": "no data", "ok": "ok"}


def level_of(severity: str) -> Level:
    return severity if severity in ("critical", "warning", "info") else "info"  # type: ignore[return-value]


def worst(levels: list[str]) -> str:
    return min(levels, key=LEVELS.index) if levels else "ok"


def badge(text: str, level: str, title: str = "") -> str:
    """An inline coloured label (HTML) carrying its entity and level for people and tests."""
    colour = COLOURS.get(level, COLOURS["info"])
    fg = "#ffffff" if level in ("critical", "info", "ok") else "#1a1a1a"
    return (f'<span class="rw-badge" data-entity="{html.escape(text)}" data-level="{level}" '
            f'title="{html.escape(title)}" style="background-color:{colour};color:{fg};'
            f'padding:1px 7px;border-radius:4px;font-weight:600;font-family:monospace">'
            f'{html.escape(text)}</span>')


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
