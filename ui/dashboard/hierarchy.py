"""The dashboard's fabric at scale: the zones and the aggregation tier worst first, one zone's
switches, one switch's ports, and the pause tree of the incident a person picks, drawn over them.

One ``/v1/fabric`` request (with the chosen incident) carries every switch's rolled-up health, so
the overview and a zone's detail are drawn from it; a switch's ports are a second request, only
when a switch is picked.
"""

from __future__ import annotations

import html

import streamlit as st

from ui.dashboard import hierarchy_svg
from ui.dashboard.heatmap import fmt
from ui.dashboard.reads import Reads
from ui.dashboard.style import COLOURS, ICONS, badge, dot
from ui.query.views import (
    LEVELS,
    FabricView,
    Incident,
    IncidentList,
    PauseTree,
    PortHealth,
    SwitchHealth,
    TreeEdge,
)

ALL = "all"
NO_TREE = ""


def _spreading(found: IncidentList) -> list[Incident]:
    return sorted((i for i in found.incidents if i.symptoms and i.status == "firing"),
                  key=lambda i: (-len(i.symptoms), i.entity))


def tree_of(found: IncidentList, picked: str | None) -> str:
    """The incident whose pause tree is drawn: of those explaining symptoms, the one explaining
    the most (the widest spread) unless a person picked another (``picked``)."""
    spreading = _spreading(found)
    if not spreading:
        return NO_TREE
    return picked if picked in [NO_TREE, *(i.fingerprint for i in spreading)] else \
        spreading[0].fingerprint


def tree_choice(found: IncidentList) -> str:
    """The person's choice of pause tree (:func:`tree_of` by default)."""
    spreading = _spreading(found)
    if not spreading:
        return NO_TREE
    options = [NO_TREE, *(i.fingerprint for i in spreading)]
    label = {i.fingerprint: f"{i.name} on {i.entity} ({len(i.symptoms)} symptoms)"
             for i in spreading}
    st.session_state["tree"] = tree_of(found, st.session_state.get("tree"))
    chosen: str = st.selectbox("Pause tree of", options, key="tree",
                               format_func=lambda fp: label.get(fp, "none"))
    return chosen


def scope_now() -> str:
    """The heat map's scope as the zone and switch choices stand before this run draws them
    (the switch, else the zone, else the whole fabric: "")."""
    group = st.session_state.get("fabric_group") or ALL
    return str(st.session_state.get("fabric_switch") or ("" if group == ALL else group))


def group_choice(view: FabricView) -> str:
    options = [ALL, *(g.id for g in view.groups)]
    level = {g.id: g.level for g in view.groups}
    if st.session_state.get("fabric_group") not in options:
        st.session_state["fabric_group"] = ALL
    picked = st.segmented_control(
        "Zone", options, key="fabric_group",
        format_func=lambda g: "whole fabric" if g == ALL else f"{ICONS[level[g]]} {g}")
    return picked or ALL


def switch_choice(view: FabricView, group: str) -> str:
    members = [s for s in view.switches if group in (ALL, s.group)]
    members.sort(key=lambda s: (LEVELS.index(s.level), -s.problems))
    options: list[str] = ["", *(s.name for s in members)]
    label = {s.name: f"{s.name} · {s.level}" + (f" · {s.worst.alert}" if s.worst else "")
             for s in members}
    if st.session_state.get("fabric_switch") not in options:
        st.session_state["fabric_switch"] = ""
    chosen: str = st.selectbox("Switch (worst first)", options, key="fabric_switch",
                               format_func=lambda n: label.get(n, "—"))
    return chosen


def draw(view: FabricView, group: str) -> None:
    tree = view.tree
    if group == ALL:
        svg = hierarchy_svg.overview(view.groups, view.switches, tree)
    else:
        chosen = next(g for g in view.groups if g.id == group)
        aggs = [s for s in view.switches if s.role == "agg"] if chosen.kind == "zone" else []
        svg = hierarchy_svg.group_detail(chosen, view.switches, aggs, tree)
    # as a <div> block, markdown passes it through raw (st.html would strip the SVG)
    st.markdown(f'<div class="rw-fabric-wrap">{svg}</div>', unsafe_allow_html=True)
    held = sum(g.drained for g in view.groups)
    st.caption(f"{len(view.switches):,} switches in {len(view.groups)} groups, each tile the "
               f"worst of the switch, its links, hosts and ports"
               + (f"; {held} in maintenance (dashed)" if held else "") + "; hover for details")


#: a tree with more hops than this lists them by tier, every hop on demand
HOPS_LISTED = 25


def tree_summary(tree: PauseTree | None) -> None:
    if tree is None:
        return
    reached = [n for n in tree.nodes if n.depth > 0]
    deepest = max((n.depth for n in tree.nodes), default=0)
    st.markdown(f"**Pause tree of {tree.incident} on {tree.entity}**: {len(reached)} "
                f"switches and hosts paused, {deepest} hops deep, across "
                f"{', '.join(tree.groups) or 'one switch'}")
    if len(tree.edges) <= HOPS_LISTED:
        st.html(hops_html(tree))
        return
    st.html(tiers_html(tree))
    if st.toggle(f"Every hop ({len(tree.edges):,})", key="tree_hops"):
        st.html(hops_html(tree))


def _tier_of(tree: PauseTree) -> dict[str, tuple[int, str]]:
    """Each node's depth and the tier it is in."""
    return {n.name: (n.depth, hierarchy_svg.tier_name(n.group, n.role)) for n in tree.nodes}


def hops_html(tree: PauseTree) -> str:
    """Every hop: its depth, who pauses whom, over which link."""
    tier = _tier_of(tree)
    hops = []
    for e in tree.edges:
        depth = tier.get(e.upstream, (-1, ""))[0]
        hops.append(f'<tr><td style="padding:1px 8px;text-align:right">'
                    f'{depth if depth >= 0 else "?"}</td><td style="padding:1px 8px">'
                    f'{dot(e.level)}<code>{html.escape(e.downstream)}</code> pauses '
                    f'<code>{html.escape(e.upstream)}</code></td><td style="padding:1px 8px;'
                    f'font-family:monospace">{html.escape(e.link)}</td></tr>')
    return ('<table class="rw-tree-hops" style="font-size:0.85rem"><tr><th>hop</th><th>who '
            'pauses whom</th><th>over</th></tr>' + "".join(hops) + "</table>")


def tiers_html(tree: PauseTree) -> str:
    """The hops by the tiers they join, nearest the root first: how many, the worst level."""
    tier = _tier_of(tree)
    joined: dict[tuple[str, str], list[TreeEdge]] = {}
    for e in tree.edges:
        down, up = tier.get(e.downstream, (-1, "?"))[1], tier.get(e.upstream, (-1, "?"))[1]
        joined.setdefault((down, up), []).append(e)
    rows = []
    for (down, up), edges in sorted(joined.items(), key=lambda kv: min(
            tier.get(e.upstream, (99, ""))[0] for e in kv[1])):
        depths = sorted({tier.get(e.upstream, (-1, ""))[0] for e in edges} - {-1})
        span = ("?" if not depths else str(depths[0]) if len(depths) == 1
                else f"{depths[0]}–{depths[-1]}")
        level = min((e.level for e in edges), key=LEVELS.index)
        first = ", ".join(e.link for e in edges[:3]) + (" …" if len(edges) > 3 else "")
        rows.append(f'<tr><td style="padding:1px 8px;text-align:right">'
                    f'{span}</td><td style="padding:1px 8px">{dot(level)}{html.escape(down)} pause '
                    f'{html.escape(up)}</td><td style="padding:1px 8px;text-align:right">'
                    f'{len(edges):,}</td><td style="padding:1px 8px;font-family:monospace">'
                    f'{html.escape(first)}</td></tr>')
    return ('<table class="rw-tree-tiers" style="font-size:0.85rem"><tr><th>hop</th><th>who '
            'pauses whom</th><th>hops</th><th>over</th></tr>' + "".join(rows) + "</table>")


def switch_detail(reads: Reads, name: str) -> list[PortHealth]:
    view = reads.fabric(switch=name)
    sw = view.switch
    if sw is None:
        return []
    st.markdown(f"**{sw.name}** ({sw.role}, {sw.group}): {badge(sw.level, sw.level)} "
                + (f"{html.escape(sw.worst.alert)} on {html.escape(sw.worst.entity)}"
                   if sw.worst else "every port ok"), unsafe_allow_html=True)
    st.html(_port_strip(view.ports))
    return view.ports


def _port_strip(ports: list[PortHealth]) -> str:
    cells = []
    for p in ports:
        number = p.port.rsplit(":", 1)[-1].removeprefix("Ethernet")
        colour = COLOURS[p.level]
        fg = "#1a1a1a" if p.level in ("ok", "warning", "nodata") else "#ffffff"
        why = (f"{p.port} → {p.peer} ({p.entity}): {p.level}"
               + (f", {p.alert}" if p.alert else "") + (f"; {p.drained}" if p.drained else "")
               + "; " + ", ".join(f"{k} {fmt(v, k)}" for k, v in p.values.items()))
        border = "2px dashed #6b8fb3" if p.drained else "1px solid #4d4d4d"
        cells.append(f'<span class="rw-port" data-entity="{html.escape(p.port)}" '
                     f'data-level="{p.level}" title="{html.escape(why)}" style="display:'
                     f'inline-block;min-width:2.1em;margin:1px;padding:1px 2px;text-align:center;'
                     f'font:11px monospace;background:{colour};color:{fg};border:{border};'
                     f'border-radius:3px">{html.escape(number)}</span>')
    return '<div class="rw-ports" style="line-height:1.9">' + "".join(cells) + "</div>"


def worst_switch(view: FabricView) -> SwitchHealth | None:
    bad = [s for s in view.switches if s.level != "ok"]
    return min(bad, key=lambda s: (LEVELS.index(s.level), -s.problems)) if bad else None
