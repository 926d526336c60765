"""The dashboard's fabric view: the banner saying how the fabric is, the level counts, the
spine-leaf picture, the list of who is not ok and why (searchable, capped), and what is in
maintenance (drained or isolated: by which run or person, since when)."""

from __future__ import annotations

import html

import streamlit as st

from ui.dashboard.fabric_svg import draw
from ui.dashboard.style import COLOURS, LABELS, badge, dot
from ui.query.timefmt import age, clock_time
from ui.query.views import EntityStatus, FabricStatus, TopologyView

#: at most this many entities are listed; the rest are counted (search narrows the list)
LIST_MAX = 40


def banner(status: FabricStatus) -> None:
    """One line an on-call person reads first: what is wrong, or that nothing is, or no data."""
    tel = status.telemetry
    if tel.state == "empty":
        st.html(_banner_html("nodata", "No telemetry yet: the store holds no samples. Check the "
                             "collectors and ingest (see /healthz)."))
        return
    if tel.state == "silent":
        st.html(_banner_html("nodata", f"Telemetry silent for {tel.silent_s or 0:.0f} s (last "
                             f"sample {clock_time(tel.latest_ns)}): what follows is the last "
                             f"known state."))
    roots = [e for e in status.entities if e.root_cause and e.level == "critical"]
    if roots:
        names = ", ".join(f"{e.alert} on {e.entity}" for e in roots[:4])
        more = f" and {len(roots) - 4} more" if len(roots) > 4 else ""
        plural = "s" if len(roots) > 1 else ""
        st.html(_banner_html("critical", f"{len(roots)} critical incident{plural}: "
                             f"{names}{more}"))
    elif any(e.level in ("critical", "warning") for e in status.entities):
        worst = status.entities[0]
        st.html(_banner_html(worst.level, f"{worst.alert} on {worst.entity}: {worst.summary}"))
    elif tel.state == "live":
        stale = f" ({len(tel.stale_devices)} switch(es) silent)" if tel.stale_devices else ""
        st.html(_banner_html("ok", f"Fabric healthy: no alerts firing{stale}."))


def _banner_html(level: str, text: str) -> str:
    colour = COLOURS[level]
    return (f'<div class="rw-banner" data-level="{level}" style="border-left:8px solid {colour};'
            f'background:{colour}1f;padding:10px 14px;border-radius:6px;font-size:1.15rem;'
            f'font-weight:600">{dot(level)}{html.escape(text)}</div>')


def counts(status: FabricStatus) -> None:
    cols = st.columns(5)
    held = {kind: sum(1 for d in status.drained if d.kind == kind) for kind in ("link", "host")}
    for col, kind, title in zip(cols, ("link", "host", "switch"), ("Links", "Hosts", "Switches"),
                                strict=False):
        per = status.counts.get(kind, {})
        bad = {k: v for k, v in per.items() if k != "ok" and v}
        total = sum(per.values())
        text = ", ".join(f"{v:,} {LABELS[k]}" for k, v in bad.items()) or "all ok"
        if held.get(kind):
            text += f"; {held[kind]:,} {'drained' if kind == 'link' else 'isolated'}"
        col.metric(f"{title} not ok", f"{sum(bad.values()):,}", f"of {total:,}: {text}",
                   delta_color="inverse" if bad else "off", delta_arrow="off")
    incidents = sum(1 for e in status.entities if e.root_cause and e.level != "nodata")
    cols[3].metric("Incidents", incidents, "firing" if incidents else "none",
                   delta_color="inverse" if incidents else "off", delta_arrow="off")
    tel = status.telemetry
    cols[4].metric("Telemetry", tel.state, f"{tel.devices_seen} devices reporting",
                   delta_color="off", delta_arrow="off")


def picture(topo: TopologyView, status: FabricStatus, search: str) -> None:
    if not topo.known:
        st.info("The topology is not known to the API: showing the devices seen in telemetry "
                "and the entities that are not ok.")
        return
    by_entity = {e.entity: e for e in status.entities}
    drawing = draw(topo, by_entity, {d.target: d.summary for d in status.drained})
    # as a <div> block, markdown passes it through raw (st.html would strip the SVG)
    st.markdown(f'<div class="rw-fabric-wrap">{drawing.svg}</div>', unsafe_allow_html=True)
    st.caption(f"{len(topo.spines)} spines, {len(topo.leaves)} leaves, {len(topo.links)} links, "
               f"{len(topo.hosts)} hosts — {drawing.mode} view; hover for details")
    if search:
        st.caption(f"searching for {search!r}: see the list on the right")


def who_is_not_ok(status: FabricStatus, search: str) -> list[EntityStatus]:
    """The entities that are not ok, narrowed by ``search``: the red ones and the incidents
    first, the rest (symptoms, warnings, no data) folded below; returns them all."""
    needle = search.lower()
    found = [e for e in status.entities
             if not needle or needle in e.entity.lower() or needle in e.alert.lower()]
    if not found:
        st.markdown(":green[●] **Nothing matches.**" if search else ":green[●] **Every link, "
                    "host and switch is ok.**")
        return []
    now = status.clock.now_ns
    first = [e for e in found if e.level == "critical" or e.root_cause]
    rest = [e for e in found if e not in first]
    if first:
        st.html(_rows(first[:LIST_MAX], now))
    if rest:
        with st.expander(f"{len(rest)} more: symptoms, warnings, no data", expanded=not first):
            st.html(_rows(rest[:LIST_MAX], now))
            if len(rest) > LIST_MAX:
                st.caption(f"{len(rest) - LIST_MAX} more not shown: search to narrow the list")
    return found


def _rows(entities: list[EntityStatus], now_ns: int) -> str:
    rows = []
    for e in entities:
        what = "incident" if e.root_cause else ("no data" if e.level == "nodata" else "symptom")
        since = f" · {age(e.since_ns, now_ns)}" if e.since_ns else ""
        held = (f' <span class="rw-drained" title="{html.escape(e.drained)}" '
                f'style="{_DRAINED_STYLE}">drained</span>') if e.drained else ""
        rows.append(
            f'<div class="rw-row" style="margin:3px 0">{badge(e.entity, e.level, e.summary)} '
            f'<b>{html.escape(e.alert)}</b>{held} <span style="color:#666">({e.kind}, {what}'
            f'{since})</span>{_summary(e)}</div>')
    return "".join(rows)


_DRAINED_STYLE = ("border:1.5px dashed #6b8fb3;color:#35618f;padding:0 5px;border-radius:4px;"
                  "font-size:0.8rem;font-weight:600")


def in_maintenance(status: FabricStatus, search: str) -> None:
    """Links drained and hosts isolated on purpose: by which run or person, since when."""
    needle = search.lower()
    held = [d for d in status.drained if not needle or needle in d.target.lower()]
    if not held:
        return
    now = status.clock.now_ns
    rows = []
    for d in held:
        who = f"run {d.run}" if d.run else d.origin
        by = f" ({d.by})" if d.by and d.by != d.run else ""
        what = {"held": "drained" if d.kind == "link" else "isolated",
                "soaking": "soaking after repair"}[d.state]
        rows.append(
            f'<div class="rw-maintenance" data-entity="{html.escape(d.target)}" '
            f'data-state="{d.state}" style="margin:3px 0"><span style="{_DRAINED_STYLE};'
            f'font-family:monospace">{html.escape(d.target)}</span> <b>{what}</b> by '
            f'{html.escape(who + by)} since {clock_time(d.since_ns)} '
            f'<span style="color:#666">({age(d.since_ns, now)}, {html.escape(d.phase)})</span>'
            f'</div>')
    st.markdown(f"**In maintenance** ({len(held)})")
    st.html("".join(rows))


def _summary(e: EntityStatus) -> str:
    """The alert's summary under its badge, unless it only repeats the name and entity."""
    if e.summary in (f"{e.alert} on {e.entity}", f"no samples from {e.entity}"):
        return ""
    return f'<br><span style="font-size:0.85rem">{html.escape(e.summary)}</span>'
