"""The dashboard's incidents: each root cause with its evidence, its ports (one click charts
them) and the symptoms it explains; the symptoms nothing explains; what resolved lately; and the
commands people give (approve or reject a drain, drain a link for maintenance, record a repair,
silence), offered as the session's token may give them (the API records its identity as the
actor).

Its tables are small HTML tables; an incident explaining hundreds of symptoms lists the first
:data:`SYMPTOMS_LISTED` and every one, in a data grid, on demand."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from pipeline.errors import QueryError, StoreError
from ui.dashboard.reads import Reads
from ui.dashboard.session import Session
from ui.dashboard.style import ICONS, level_of, md, table
from ui.query.timefmt import age, clock_time
from ui.query.views import AlertView, Incident, IncidentList

Investigate = Callable[[str], None]
#: symptoms listed under an incident before "every symptom" is asked for
SYMPTOMS_LISTED = 12

COMMANDS = {
    "approve": "Approve the pending drain",
    "reject": "Reject the pending drain",
    "drain": "Drain the link for maintenance",
    "repair": "Record a repair (enable and soak)",
    "silence": "Silence its notifications for 2 h",
}


def _symptom_rows(alerts: list[AlertView], now_ns: int) -> list[dict[str, str]]:
    return [{
        "alert": a.name, "entity": a.entity, "severity": a.severity,
        "since": clock_time(a.starts_ns), "age": age(a.starts_ns, now_ns),
        "evidence": ", ".join(f"{k}={v:g}" for k, v in a.evidence.items()),
    } for a in alerts]


def symptoms(alerts: list[AlertView], now_ns: int, key: str) -> None:
    """The first :data:`SYMPTOMS_LISTED` symptoms as a table; every one in a grid on demand."""
    rows = _symptom_rows(alerts, now_ns)
    if len(rows) <= SYMPTOMS_LISTED:
        st.html(table(rows, "rw-symptoms"))
        return
    if st.toggle(f"Every symptom ({len(rows):,})", key=f"all-{key}"):
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        return
    st.html(table(rows[:SYMPTOMS_LISTED], "rw-symptoms"))
    st.caption(f"{len(rows) - SYMPTOMS_LISTED:,} more")


def incidents(reads: Reads, found: IncidentList, investigate: Investigate,
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
            _incident(reads, inc, now, investigate, session)
    if found.unexplained:
        st.markdown(f"**Symptoms no incident explains** ({len(found.unexplained)})")
        symptoms(found.unexplained, now, "unexplained")


def _incident(reads: Reads, inc: Incident, now_ns: int, investigate: Investigate,
              session: Session) -> None:
    st.markdown(md(inc.summary))
    left, right = st.columns([3, 2])
    with left:
        if inc.evidence:
            st.markdown("**Evidence**")
            st.html(table([{"measure": k, "value": f"{v:g}"} for k, v in inc.evidence.items()],
                          "rw-evidence"))
        if inc.symptoms:
            st.markdown(f"**Symptoms it explains** ({len(inc.symptoms)})")
            symptoms(inc.symptoms, now_ns, inc.fingerprint)
    with right:
        if inc.ports:
            st.markdown("**Ports** — chart one in *Port drill-down*")
            for port in inc.ports:
                st.button(port, key=f"inv-{inc.fingerprint}-{port}", icon=":material/show_chart:",
                          on_click=investigate, args=(port,))
        _command_form(reads, inc, session)


def _command_form(reads: Reads, inc: Incident, session: Session) -> None:
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
                    ends_ns=reads.client.clock().now_ns + 2 * 3600 * 1_000_000_000)
    try:
        answer = reads.client.command(body)
    except (QueryError, StoreError) as exc:
        st.error(f"Not sent: {exc}")
        return
    Reads.forget()
    st.success(f"Sent {kind} as {answer.get('by', '?')} (id {answer.get('id', '?')}); its "
               f"outcome appears in Actions.")


def resolved_lately(found: IncidentList) -> None:
    gone = [i for i in found.incidents if i.status == "resolved"]
    if not gone:
        return
    now = found.clock.now_ns
    st.markdown(f"**Resolved in the last hour** ({len(gone)})")
    st.html(table([{
        "incident": i.name, "entity": i.entity, "from": clock_time(i.starts_ns),
        "to": clock_time(i.ends_ns), "ended": f"{age(i.ends_ns, now)} ago",
    } for i in gone], "rw-resolved"))
