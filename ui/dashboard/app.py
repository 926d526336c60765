"""The Streamlit ops dashboard: ``rocewatch dashboard``, or by hand
``streamlit run ui/dashboard/app.py [-- --api URL --refresh SECONDS]``.

It reads only the rocewatch API over HTTP (never the store: chDB belongs to the API's process),
and no configuration file: its command line says where the API is and how often the live part
re-runs; the API token comes from the environment (:mod:`ui.dashboard.launch`) or from the person,
once per session (:mod:`ui.dashboard.session`).

Top to bottom: a banner saying what is wrong (or that nothing is, or that there is no data), the
counts, the fabric beside the list of who is not ok and why (a small two-tier fabric as every
switch, link and host; a big one as zones and the aggregation tier worst first, a zone's switches
on demand, the chosen incident's pause tree drawn over them), the ports that matter as a heat map
(of the zone or switch chosen), then the incidents with their evidence and symptoms, one port's
charts, and the actions audit.

Loading fast at thousands of switches: every read goes through :mod:`ui.dashboard.reads` (one
request per data set per run, shared by sessions for a few seconds at one fabric generation),
the fabric's picture stays small (:mod:`ui.dashboard.hierarchy_svg`), and of the three tabs at the
bottom only the open one runs (a port's charts are read when a person opens them).
"""

from __future__ import annotations

import html
import os
import sys

import streamlit as st

from pipeline.errors import AccessDenied, ConfigError, QueryError, StoreError
from ui.dashboard import actions as dash_actions
from ui.dashboard import fabric as dash_fabric
from ui.dashboard import heatmap as dash_heatmap
from ui.dashboard import hierarchy
from ui.dashboard import incidents as dash_incidents
from ui.dashboard import port as dash_port
from ui.dashboard.fabric_svg import PICTURE_MAX_LEAVES
from ui.dashboard.launch import DashboardOptions, parse
from ui.dashboard.reads import Reads
from ui.dashboard.session import Session, sign_in
from ui.dashboard.style import dot
from ui.query.timefmt import clock_time, date_time
from ui.query.views import FabricStatus, FabricView, IncidentList

REFRESH_CHOICES = (0.0, 2.0, 5.0, 10.0, 30.0)
#: the tabs at the bottom; only the open one runs
TABS = ("Incidents", "Port drill-down", "Actions")
#: the incidents tab lists what resolved since
RESOLVED_SINCE = "now-1h"


def _investigate(port: str) -> None:
    device, _, name = port.partition(":")
    st.session_state["dd_dev"] = device
    st.session_state["dd_port"] = name
    st.session_state["details"] = TABS[1]


def _small(view: FabricView) -> bool:
    """A two-tier fabric small enough to draw every link and host."""
    leaves = sum(1 for s in view.switches if s.role == "leaf")
    return view.tiers == 2 and leaves <= PICTURE_MAX_LEAVES


def _default_port(reads: Reads, view: FabricView,
                  found: IncidentList) -> tuple[str, str] | None:
    """The worst incident's first port (what an operator opens first), else the worst
    switch's first port."""
    for inc in found.incidents:
        for port in inc.ports:
            device, _, name = port.partition(":")
            if name:
                return device, name
    worst = hierarchy.worst_switch(view) or (view.switches[0] if view.switches else None)
    if worst is None:
        return None
    ports = reads.fabric(switch=worst.name).ports
    return (worst.name, ports[0].port.split(":", 1)[1]) if ports else None


def _port_section(reads: Reads, view: FabricView, found: IncidentList) -> None:
    if "dd_dev" not in st.session_state:
        default = _default_port(reads, view, found)
        if default is None:
            st.info("No switches known yet: nothing to chart.")
            return
        st.session_state["dd_dev"], st.session_state["dd_port"] = default
    switches = [s.name for s in view.switches]
    if st.session_state["dd_dev"] not in switches:
        switches.append(st.session_state["dd_dev"])
    cols = st.columns([2, 3, 3])
    device = cols[0].selectbox("Switch", switches, key="dd_dev")
    choices = dash_port.port_choices(reads.fabric(switch=device).ports) \
        if device in {s.name for s in view.switches} else {}
    if choices:
        if st.session_state.get("dd_port") not in choices:
            st.session_state["dd_port"] = next(iter(choices))
        port = cols[1].selectbox("Port", list(choices), format_func=choices.__getitem__,
                                 key="dd_port")
    else:
        port = cols[1].text_input("Port", key="dd_port")
    span = cols[2].segmented_control("Range", dash_port.RANGES, default="15m", key="dd_span")
    if port:
        dash_port.drill_down(reads, device, port, choices.get(port, port), span or "15m")


def _fabric_section(reads: Reads, status: FabricStatus, found: IncidentList,
                    search: str) -> tuple[FabricView, str]:
    """The fabric's picture beside who is not ok; returns the view and the heat map's scope."""
    scope = ""
    left, right = st.columns([5, 3])
    with left:
        tree = hierarchy.tree_choice(found)
        view = reads.fabric(incident=tree or None)
        if _small(view):
            dash_fabric.picture(reads.topology(), status, search)
        else:
            group = hierarchy.group_choice(view)
            hierarchy.draw(view, group)
            scope = "" if group == hierarchy.ALL else group
        hierarchy.tree_summary(view.tree)
    with right:
        st.markdown("**Not ok** (worst first)")
        dash_fabric.who_is_not_ok(status, search)
        dash_fabric.in_maintenance(status, search)
    return view, scope


def live(options: DashboardOptions, search: str, session: Session, every: float) -> None:
    """Everything that refreshes (every ``every`` seconds; 0: on a person's action): the reads
    of the first paint at once, then each section."""
    url = options.api_url
    try:
        reads = Reads.start(url, session.token, every or options.refresh_s)
        touching = search or None
        picked = st.session_state.get("tree")
        reads.prefetch(
            lambda r: r.status(top=10),
            lambda r: r.fabric(incident=hierarchy.tree_of(r.incidents(touching=touching),
                                                          picked) or None),
            dash_heatmap.prefetch(hierarchy.scope_now(), search),
            *([lambda r: r.incidents(start=RESOLVED_SINCE)]
              if st.session_state.get("details", TABS[0]) == TABS[0] else []))
        status = reads.status(top=10)
    except AccessDenied as exc:
        st.warning(f"The API at {url} wants a token to read: sign in (sidebar). ({exc})")
        return
    except StoreError as exc:
        st.error(f"Cannot reach the rocewatch API: {exc}")
        st.html(_nodata_html(f"No data: the API at {url} does not answer."))
        return
    st.caption(f"Fabric time {date_time(status.clock.now_ns)} · API {url} · "
               f"refreshed {clock_time(status.clock.wall_ns)} wall clock")
    dash_fabric.banner(status)
    dash_fabric.counts(status)
    try:
        found = reads.incidents(touching=search or None)
        view, scope = _fabric_section(reads, status, found, search)
        st.markdown("#### Ports that matter")
        switch = hierarchy.switch_choice(view, scope or hierarchy.ALL)
        if switch:
            hierarchy.switch_detail(reads, switch)
        dash_heatmap.section(reads, switch or scope, search)
        tab_inc, tab_port, tab_act = st.tabs(TABS, key="details", on_change="rerun")
        if tab_inc.open:
            with tab_inc:
                dash_incidents.incidents(reads, found, _investigate, session)
                dash_incidents.resolved_lately(reads.incidents(start=RESOLVED_SINCE))
        if tab_port.open:
            with tab_port:
                _port_section(reads, view, found)
        if tab_act.open:
            with tab_act:
                dash_actions.audit(reads, reads.actions(), session)
    except QueryError as exc:
        st.warning(f"The API refused a request: {exc}")
    except StoreError as exc:
        st.error(f"The API failed: {exc}")


def _nodata_html(text: str) -> str:
    return (f'<div class="rw-banner" data-level="nodata" style="border-left:8px solid #9e9e9e;'
            f'background:#9e9e9e1f;padding:10px 14px;border-radius:6px;font-weight:600">'
            f'{dot("nodata")}{html.escape(text)}</div>')


def main() -> None:
    st.set_page_config(page_title="rocewatch", page_icon="🛰️", layout="wide")
    try:
        options = parse(sys.argv[1:], os.environ)
    except ConfigError as exc:
        st.error(f"Dashboard configuration: {exc}")
        return
    with st.sidebar:
        # the name as HTML and the links as markdown with HTML: the first things a browser draws
        # make it fetch the code that draws the banner and the fabric's picture, while the
        # script is still reading them (Streamlit loads each kind of element's code on first use)
        st.html('<div style="font-size:2rem;font-weight:700;line-height:1.2">rocewatch</div>'
                '<div style="color:#808495;font-size:0.875rem">RoCE fabric operations</div>')
        search = st.text_input("Search", key="search", placeholder="leaf3, host12, pfc_storm…",
                               help="narrows the not-ok list and the incidents").strip()
        refresh = options.refresh_s
        default = refresh if refresh in REFRESH_CHOICES else REFRESH_CHOICES[1]
        every = st.selectbox("Auto-refresh", REFRESH_CHOICES,
                             index=REFRESH_CHOICES.index(default), key="refresh",
                             format_func=lambda s: f"every {s:g} s" if s else "off")
        session = sign_in(options)
        url = options.api_url
        st.markdown(f'<a href="{html.escape(url)}/docs">API docs</a> · '
                    f'<a href="{html.escape(url)}/healthz">health</a>', unsafe_allow_html=True)
    st.subheader("Fabric status")
    st.fragment(run_every=every or None)(live)(options, search, session, every)


main()
