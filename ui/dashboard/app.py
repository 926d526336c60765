"""The Streamlit ops dashboard: ``rocewatch dashboard``, or by hand
``streamlit run ui/dashboard/app.py [-- --api URL --refresh SECONDS]``.

It reads only the rocewatch API over HTTP (never the store: chDB belongs to the API's process),
and no configuration file: its command line says where the API is and how often the live part
re-runs, and the command token comes from the environment (:mod:`ui.dashboard.launch`).

Top to bottom: a banner saying what is wrong (or that nothing is, or that there is no data), the
counts, the fabric picture beside the list of who is not ok and why, then the incidents with their
evidence and symptoms, one port's charts, and the actions audit.
"""

from __future__ import annotations

import html
import os
import sys

import streamlit as st

from pipeline.errors import ConfigError, QueryError, StoreError
from ui.api.client import ApiClient
from ui.dashboard import actions as dash_actions
from ui.dashboard import fabric as dash_fabric
from ui.dashboard import incidents as dash_incidents
from ui.dashboard import port as dash_port
from ui.dashboard.launch import DashboardOptions, parse
from ui.dashboard.style import dot
from ui.query.timefmt import clock_time, date_time
from ui.query.views import FabricStatus, TopologyView

REFRESH_CHOICES = (0.0, 2.0, 5.0, 10.0, 30.0)


@st.cache_resource
def _client(options: DashboardOptions) -> ApiClient:
    return ApiClient(options.api_url, timeout_s=15.0, token=options.token)


@st.cache_data(ttl=30, show_spinner=False)
def _topology(options: DashboardOptions) -> TopologyView:
    return _client(options).topology()


def _investigate(port: str) -> None:
    device, _, name = port.partition(":")
    st.session_state["dd_dev"] = device
    st.session_state["dd_port"] = name


def _default_port(topo: TopologyView, status: FabricStatus) -> tuple[str, str] | None:
    """The port of the worst entity: what an operator opens first."""
    links = {link["id"]: link for link in topo.links}
    hosts = {h["name"]: h for h in topo.hosts}
    for e in status.entities:
        port = ""
        if e.kind == "link" and e.entity in links:
            port = links[e.entity]["a"]
        elif e.kind == "host" and e.entity in hosts:
            port = hosts[e.entity]["port"]
        elif e.kind == "port":
            port = e.entity
        if port:
            device, _, name = port.partition(":")
            return device, name
    switches = topo.spines + topo.leaves or topo.devices
    if switches:
        ports = list(dash_port.port_choices(topo, switches[0]))
        return (switches[0], ports[0] if ports else "Ethernet1")
    return None


def _port_section(client: ApiClient, topo: TopologyView, status: FabricStatus) -> None:
    if "dd_dev" not in st.session_state:
        default = _default_port(topo, status)
        if default is None:
            st.info("No switches known yet: nothing to chart.")
            return
        st.session_state["dd_dev"], st.session_state["dd_port"] = default
    switches = list(topo.spines + topo.leaves) or list(topo.devices)
    if st.session_state["dd_dev"] not in switches:
        switches.append(st.session_state["dd_dev"])
    cols = st.columns([2, 3, 3])
    device = cols[0].selectbox("Switch", switches, key="dd_dev")
    choices = dash_port.port_choices(topo, device)
    if choices:
        if st.session_state.get("dd_port") not in choices:
            st.session_state["dd_port"] = next(iter(choices))
        port = cols[1].selectbox("Port", list(choices), format_func=choices.__getitem__,
                                 key="dd_port")
    else:
        port = cols[1].text_input("Port", key="dd_port")
    span = cols[2].segmented_control("Range", dash_port.RANGES, default="15m", key="dd_span")
    if port:
        dash_port.drill_down(client, topo, device, port, span or "15m")


def live(options: DashboardOptions, search: str, user: str) -> None:
    """Everything that refreshes: one status read, then each section."""
    client = _client(options)
    url = options.api_url
    try:
        status = client.status(top=10)
        topo = _topology(options)
    except StoreError as exc:
        st.error(f"Cannot reach the rocewatch API: {exc}")
        st.html(_nodata_html(f"No data: the API at {url} does not answer."))
        return
    st.caption(f"Fabric time {date_time(status.clock.now_ns)} · API {url} · "
               f"refreshed {clock_time(status.clock.wall_ns)} wall clock")
    dash_fabric.banner(status)
    dash_fabric.counts(status)
    left, right = st.columns([5, 3])
    with left:
        dash_fabric.picture(topo, status, search)
    with right:
        st.markdown("**Not ok** (worst first)")
        dash_fabric.who_is_not_ok(status, search)
    tab_inc, tab_port, tab_act = st.tabs(["Incidents", "Port drill-down", "Actions"])
    try:
        with tab_inc:
            dash_incidents.incidents(client, client.incidents(touching=search or None),
                                     _investigate, user)
            dash_incidents.resolved_lately(client.incidents(start="now-1h"))
        with tab_port:
            _port_section(client, topo, status)
        with tab_act:
            dash_actions.audit(client, client.actions(), user)
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
        user = st.text_input("Your name (for commands)", key="user", value="")
        url = options.api_url
        st.markdown(f"[API docs]({url}/docs) · [health]({url}/healthz)")
    st.subheader("Fabric status")
    st.fragment(run_every=every or None)(live)(options, search, user)


main()
