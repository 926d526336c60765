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
"""

from __future__ import annotations

import html
import os
import sys

import streamlit as st

from pipeline.errors import AccessDenied, ConfigError, QueryError, StoreError
from ui.api.client import ApiClient
from ui.dashboard import actions as dash_actions
from ui.dashboard import fabric as dash_fabric
from ui.dashboard import heatmap as dash_heatmap
from ui.dashboard import hierarchy
from ui.dashboard import incidents as dash_incidents
from ui.dashboard import port as dash_port
from ui.dashboard.fabric_svg import PICTURE_MAX_LEAVES
from ui.dashboard.launch import DashboardOptions, parse
from ui.dashboard.session import Session, client_for, sign_in
from ui.dashboard.style import dot
from ui.query.timefmt import clock_time, date_time
from ui.query.views import FabricStatus, FabricView, IncidentList, TopologyView

REFRESH_CHOICES = (0.0, 2.0, 5.0, 10.0, 30.0)


@st.cache_data(ttl=30, show_spinner=False)
def _topology(api_url: str, token: str) -> TopologyView:
    """The whole topology: only small fabrics' picture draws every link and host."""
    return client_for(api_url, token).topology()


def _investigate(port: str) -> None:
    device, _, name = port.partition(":")
    st.session_state["dd_dev"] = device
    st.session_state["dd_port"] = name


def _small(view: FabricView) -> bool:
    """A two-tier fabric small enough to draw every link and host."""
    leaves = sum(1 for s in view.switches if s.role == "leaf")
    return view.tiers == 2 and leaves <= PICTURE_MAX_LEAVES


def _default_port(client: ApiClient, view: FabricView,
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
    ports = client.fabric(switch=worst.name).ports
    return (worst.name, ports[0].port.split(":", 1)[1]) if ports else None


def _port_section(client: ApiClient, view: FabricView, found: IncidentList) -> None:
    if "dd_dev" not in st.session_state:
        default = _default_port(client, view, found)
        if default is None:
            st.info("No switches known yet: nothing to chart.")
            return
        st.session_state["dd_dev"], st.session_state["dd_port"] = default
    switches = [s.name for s in view.switches]
    if st.session_state["dd_dev"] not in switches:
        switches.append(st.session_state["dd_dev"])
    cols = st.columns([2, 3, 3])
    device = cols[0].selectbox("Switch", switches, key="dd_dev")
    choices = dash_port.port_choices(client.fabric(switch=device).ports) \
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
        dash_port.drill_down(client, device, port, choices.get(port, port), span or "15m")


def _fabric_section(client: ApiClient, session: Session, options: DashboardOptions,
                    status: FabricStatus, found: IncidentList,
                    search: str) -> tuple[FabricView, str]:
    """The fabric's picture beside who is not ok; returns the view and the heat map's scope."""
    scope = ""
    left, right = st.columns([5, 3])
    with left:
        tree = hierarchy.tree_choice(found)
        view = client.fabric(incident=tree or None)
        if _small(view):
            dash_fabric.picture(_topology(options.api_url, session.token), status, search)
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


def live(options: DashboardOptions, search: str, session: Session) -> None:
    """Everything that refreshes: one status read, then each section."""
    client = client_for(options.api_url, session.token)
    url = options.api_url
    try:
        status = client.status(top=10)
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
        found = client.incidents(touching=search or None)
        view, scope = _fabric_section(client, session, options, status, found, search)
        st.markdown("#### Ports that matter")
        switch = hierarchy.switch_choice(view, scope or hierarchy.ALL)
        if switch:
            hierarchy.switch_detail(client, switch)
        dash_heatmap.section(client, switch or scope, search)
        tab_inc, tab_port, tab_act = st.tabs(["Incidents", "Port drill-down", "Actions"])
        with tab_inc:
            dash_incidents.incidents(client, found, _investigate, session)
            dash_incidents.resolved_lately(client.incidents(start="now-1h"))
        with tab_port:
            _port_section(client, view, found)
        with tab_act:
            dash_actions.audit(client, client.actions(), session)
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
        st.title("rocewatch")
        st.caption("RoCE fabric operations")
        search = st.text_input("Search", key="search", placeholder="leaf3, host12, pfc_storm…",
                               help="narrows the not-ok list and the incidents").strip()
        refresh = options.refresh_s
        default = refresh if refresh in REFRESH_CHOICES else REFRESH_CHOICES[1]
        every = st.selectbox("Auto-refresh", REFRESH_CHOICES,
                             index=REFRESH_CHOICES.index(default), key="refresh",
                             format_func=lambda s: f"every {s:g} s" if s else "off")
        session = sign_in(options)
        url = options.api_url
        st.markdown(f"[API docs]({url}/docs) · [health]({url}/healthz)")
    st.subheader("Fabric status")
    st.fragment(run_every=every or None)(live)(options, search, session)


main()
