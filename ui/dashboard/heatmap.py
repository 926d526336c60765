"""The dashboard's heat map of the ports that matter: one row per port, one coloured cell per
measure (utilisation, PFC each way, time paused, ECN marks, errors), ranked by the measure a
person picks, narrowed to the zone or switch they are looking at and by the search box.

A cell's colour is its column's hue at an intensity on a log scale up to the column's ``high``
(a PFC storm's thousands of pauses per second and a busy port's two are both readable).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

import streamlit as st

from ui.dashboard.reads import Reads
from ui.dashboard.style import COLOURS, dot
from ui.query.timefmt import age, clock_time
from ui.query.views import HeatColumn, HeatMap

HUES: dict[str, str] = {"util": "#4e79a7", "pfc_rx": "#8e44ad", "pfc_tx": "#8e44ad",
                        "paused": "#8e44ad", "ecn": "#e07b00", "errors": "#d62728"}
SORTS: dict[str, str] = {"pfc_rx": "PFC received", "pfc_tx": "PFC sent",
                         "paused": "time paused", "ecn": "ECN marks", "errors": "errors",
                         "util": "utilisation"}
ROWS = (25, 50, 100, 200)


def _read(reads: Reads, scope: str, sort: str, search: str, top: int) -> HeatMap:
    return reads.heatmap(scope=scope or None, sort=sort, search=search or None, top=top)


def prefetch(scope: str, search: str) -> Callable[[Reads], HeatMap]:
    """The read :func:`section` will make with the ranking and rows chosen so far."""
    sort = st.session_state.get("heat_sort", next(iter(SORTS)))
    top = st.session_state.get("heat_rows", ROWS[1])
    return lambda reads: _read(reads, scope, sort, search, top)


def intensity(value: float | None, high: float) -> float:
    """0..1 on a log scale: 0 for nothing, 1 at ``high`` or above."""
    if value is None or value <= 0:
        return 0.0
    return min(1.0, math.log10(1 + value) / math.log10(1 + high))


def fmt(value: float | None, key: str) -> str:
    if value is None:
        return "—"
    if key in ("util", "paused"):
        return f"{value:.0f}%" if value >= 1 or value == 0 else f"{value:.1f}%"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if value >= 10 or value == 0 else f"{value:.1f}"


def _cell(value: float | None, col: HeatColumn) -> str:
    level = intensity(value, col.high)
    hue = HUES.get(col.key, "#4e79a7")
    alpha = 0 if level == 0 else round((0.12 + 0.83 * level) * 255)
    fg = "#ffffff" if level > 0.6 else "#1a1a1a"
    return (f'<td class="rw-heat" data-col="{col.key}" data-intensity="{level:.2f}" '
            f'style="background:{hue}{alpha:02x};color:{fg};text-align:right;'
            f'padding:2px 8px;font-family:monospace">{html.escape(fmt(value, col.key))}</td>')


def table_html(heat: HeatMap) -> str:
    head = "".join(
        f'<th style="padding:2px 8px;text-align:right" title="{html.escape(c.unit)}">'
        f'{html.escape(c.title)}<br><span style="font-weight:normal;font-size:0.75rem">'
        f'{html.escape(c.unit)}</span></th>' for c in heat.columns)
    rows = []
    for r in heat.rows:
        cells = "".join(_cell(v, c) for v, c in zip(r.values, heat.columns, strict=True))
        reach = r.peer if r.peer == r.entity else f"{r.peer} ({r.entity})"
        rows.append(
            f'<tr class="rw-heat-row" data-port="{html.escape(r.port)}" data-level="{r.level}">'
            f'<td style="padding:2px 8px;white-space:nowrap">{dot(r.level)}'
            f'<span style="font-family:monospace;font-weight:600">{html.escape(r.port)}</span>'
            f'</td><td style="padding:2px 8px;font-size:0.85rem;color:#4d4d4d">→ '
            f'{html.escape(reach)}</td>{cells}</tr>')
    return ('<div style="max-height:560px;overflow-y:auto">'
            '<table class="rw-heatmap" style="border-collapse:collapse;font-size:0.9rem;'
            'width:100%"><thead style="position:sticky;top:0;background:#ffffff">'
            '<tr><th style="text-align:left;padding:2px 8px">port</th>'
            f'<th style="text-align:left;padding:2px 8px">reaches</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def section(reads: Reads, scope: str, search: str) -> HeatMap:
    cols = st.columns([2, 1, 4])
    sort = cols[0].selectbox("Rank ports by", list(SORTS), format_func=SORTS.__getitem__,
                             key="heat_sort")
    top = cols[1].selectbox("Rows", ROWS, index=1, key="heat_rows")
    heat = _read(reads, scope, sort, search, top)
    where = "the whole fabric" if heat.scope == "fabric" else heat.scope
    found = (f"{heat.matched:,} of {heat.ports:,} ports match {search!r}" if search
             else f"{heat.ports:,} ports")
    when = (f"as of {clock_time(heat.as_of_ns)} ({age(heat.as_of_ns, heat.clock.now_ns)} before "
            f"the fabric's now), from {heat.source}") if heat.as_of_ns else "no port values yet"
    cols[2].caption(f"Top {len(heat.rows)} of {where} by {SORTS[sort]} — {found}; {when}")
    if not heat.rows:
        st.info("No port matches." if search else "No port reports these measures yet.")
        return heat
    st.html(table_html(heat))
    legend = " ".join(f'<span style="background:{HUES[k]}cc;color:#fff;padding:0 6px;'
                      f'border-radius:3px;margin-right:4px">{html.escape(SORTS[k])}</span>'
                      for k in ("util", "pfc_rx", "ecn", "errors"))
    st.html(f'<div style="font-size:0.8rem;color:{COLOURS["nodata"]}">darker is more (log '
            f'scale to each column\'s high): {legend}</div>')
    return heat
