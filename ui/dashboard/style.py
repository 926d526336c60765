"""The dashboard's visual vocabulary: level colours, dots, badges, literal text."""

from __future__ import annotations

import html

from ui.query.views import LEVELS, Level

COLOURS: dict[str, str] = {
    "critical": "#d62728",
    "warning": "#f28e2b",
    "info": "#4e79a7",
    "nodata": "#9e9e9e",
    "ok": "#59a14f",
}
#: a coloured dot in Streamlit markdown (no emoji: not every browser has an emoji font)
ICONS: dict[str, str] = {"critical": ":red[●]", "warning": ":orange[●]", "info": ":blue[●]",
                         "nodata": ":gray[●]", "ok": ":green[●]"}
LABELS: dict[str, str] = {"critical": "critical", "warning": "warning", "info": "info",
                          "nodata": "no data", "ok": "ok"}


_MD_SPECIAL = set("\\`*_{}[]<>()#+-.!|~$:")


def md(text: str) -> str:
    """Text made literal for Streamlit markdown (``leaf1~spine1, leaf2~spine1`` is no strike)."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def svg_text(text: str) -> str:
    """Text made literal inside SVG that passes through a markdown renderer."""
    return "".join(f"&#{ord(ch)};" if ch in "~_*#`[]|&<>\"'" else ch for ch in text)


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


def table(rows: list[dict[str, str]], cls: str) -> str:
    """Rows of text as a small HTML table (cheaper for a browser than a data grid), headed by
    the first row's keys; every cell escaped."""
    if not rows:
        return ""
    cell = "padding:1px 8px;text-align:left;vertical-align:top"
    head = "".join(f'<th style="{cell}">{html.escape(k)}</th>' for k in rows[0])
    body = "".join("<tr>" + "".join(f'<td style="{cell}">{html.escape(v)}</td>'
                                    for v in r.values()) + "</tr>" for r in rows)
    return (f'<table class="{cls}" style="font-size:0.85rem;border-collapse:collapse">'
            f"<tr>{head}</tr>{body}</table>")


def dot(level: str) -> str:
    """A coloured dot in HTML."""
    return (f'<span style="display:inline-block;width:0.8em;height:0.8em;border-radius:50%;'
            f'background:{COLOURS.get(level, COLOURS["info"])};margin-right:0.35em"></span>')
