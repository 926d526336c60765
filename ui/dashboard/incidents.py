"""The dashboard's incidents: each root cause with its evidence, its ports (one click charts
them) and the symptoms it explains; the symptoms nothing explains; what resolved lately; and the
commands people give (approve or reject a drain, drain a link for maintenance, record a repair,
silence), offered as the session's token may give them (the API records its identity as the
actor)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from pipeline.errors import QueryError, StoreError
from ui.api.client import ApiClient
from ui.dashboard.session import Session
from ui.dashboard.style import ICONS, level_of, md
from ui.query.timefmt import age, clock_time
from ui.query.views import AlertView, Incident, IncidentList

Investigate = Callable[[str], None]

COMMANDS = {
    "approve": "Approve the pending drain",
    "reject": "Reject the pending drain",
    "drain": "Drain the link for maintenance",
    "repair": "Record a repair (enable and soak)",
    "silence": "Silence its notifications for 2 h",
}


def _symptom_table(alerts: list[AlertView], now_ns: int) -> pd.DataFrame:
    return pd.DataFrame([{
        "alert": a.name, "entity": a.entity, "severity": a.severity,
        "since": clock_time(a.starts_ns), "age": age(a.starts_ns, now_ns),
        "evidence": ", ".join(f"{k}={v:g}" for k, v in a.evidence.items()),
    } for a in alerts])


def incidents(client: ApiClient, found: IncidentList, investigate: Investigate,
              session: Session) -> None:
    now = found.clock.now_ns
    if not found.incidents:
        st.success("No incidents firing.")
    for i, inc in enumerate(found.incidents):
        icon = ICONS[level_of(inc.severity)]
        title = (f"{icon} **{md(inc.name)}** on **{md(inc.entity)}** — since "
                 f"{clock_time(inc.starts_ns)} ({age(inc.starts_ns, now)}), confidence "
                 f"{inc.confidence:.2f}")
        with st.expander(title, expanded=i < 3):
            _incident(client, inc, now, investigate, session)
    if found.unexplained:
        st.markdown(f"**Symptoms no incident explains** ({len(found.unexplained)})")
        st.dataframe(_symptom_table(found.unexplained, now), hide_index=True)


def _incident(client: ApiClient, inc: Incident, now_ns: int, investigate: Investigate,
              session: Session) -> None:
    st.markdown(md(inc.summary))
    left, right = st.columns([3, 2])
    with left:
        if inc.evidence:
            st.markdown("**Evidence**")
            st.dataframe(pd.DataFrame({"measure": list(inc.evidence),
                                       "value": list(inc.evidence.values())}),
                         hide_index=True)
        if inc.symptoms:
            st.markdown(f"**Symptoms it explains** ({len(inc.symptoms)})")
            st.dataframe(_symptom_table(inc.symptoms, now_ns), hide_index=True)
    with right:
        if inc.ports:
            st.markdown("**Ports** — chart one in *Port drill-down*")
            for port in inc.ports:
                st.button(port, key=f"inv-{inc.fingerprint}-{port}", icon=":material/show_chart:",
                          on_click=investigate, args=(port,))
        _command_form(client, inc, session)


def _command_form(client: ApiClient, inc: Incident, session: Session) -> None:
    kinds = [k for k in COMMANDS if session.may(k) and (k != "drain" or "~" in inc.entity)]
    if not kinds:
        st.caption("Sign in with an operator's token (sidebar) to act on this incident."
                   if session.identity is None or session.identity.role == "viewer"
                   else "Your token's role gives no command here.")
        return
    with st.form(key=f"cmd-{inc.fingerprint}", border=True):
        kind = st.selectbox("Command", kinds, format_func=COMMANDS.__getitem__,
                            key=f"cmd-kind-{inc.fingerprint}")
        comment = st.text_input("Comment", key=f"cmd-comment-{inc.fingerprint}",
                                placeholder="what you checked or did")
        if not st.form_submit_button("Send"):
            return
    body: dict[str, object] = {"kind": kind, "comment": comment}
    if kind in ("approve", "reject", "drain"):
        body["target"] = inc.entity
    elif kind == "repair":
        body.update(target=inc.entity, action=comment or "repaired")
    else:
        body.update(matchers=[f"alertname={inc.name}", f"entity={inc.entity}"],
                    ends_ns=client.clock().now_ns + 2 * 3600 * 1_000_000_000)
    try:
        answer = client.command(body)
    except (QueryError, StoreError) as exc:
        st.error(f"Not sent: {exc}")
        return
    st.success(f"Sent {kind} as {answer.get('by', '?')} (id {answer.get('id', '?')}); its "
               f"outcome appears in Actions.")


def resolved_lately(found: IncidentList) -> None:
    gone = [i for i in found.incidents if i.status == "resolved"]
    if not gone:
        return
    now = found.clock.now_ns
    st.markdown(f"**Resolved in the last hour** ({len(gone)})")
    st.dataframe(pd.DataFrame([{
        "incident": i.name, "entity": i.entity, "from": clock_time(i.starts_ns),
        "to": clock_time(i.ends_ns), "ended": f"{age(i.ends_ns, now)} ago",
    } for i in gone]), hide_index=True)
