"""The dashboard's actions audit: every notification, drain decision (dry runs included), TE
notice and command outcome, newest first, with the pending approvals on top."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pipeline.errors import QueryError, StoreError
from ui.dashboard.reads import Reads
from ui.dashboard.session import Session
from ui.dashboard.style import md
from ui.query.timefmt import age, clock_time
from ui.query.views import ActionList, ActionView


def table(actions: list[ActionView], now_ns: int) -> pd.DataFrame:
    return pd.DataFrame([{
        "time": clock_time(a.at_ns), "age": age(a.at_ns, now_ns), "action": a.action,
        "target": a.target, "mode": a.mode.replace("_", "-"),
        "outcome": a.outcome, "alert": a.alert_name,
        "detail": a.detail, "steps": " → ".join(str(s.get("step", "?")) for s in a.steps),
    } for a in actions], columns=["time", "age", "action", "target", "mode", "outcome", "alert",
                                  "detail", "steps"])


def audit(reads: Reads, found: ActionList, session: Session) -> None:
    now = found.clock.now_ns
    pending = [a for a in found.actions if a.outcome == "pending" and a.action != "maintenance"]
    if pending and not session.may("approve"):
        st.caption(f"{len(pending)} awaiting approval: sign in with an operator's token "
                   f"(sidebar) to approve or reject them.")
        pending = []
    for a in pending[:10]:
        cols = st.columns([6, 1, 1])
        cols[0].markdown(f":orange[●] **{md(a.action)}** of **{md(a.target)}** awaits approval "
                         f"— {md(a.detail)}")
        for col, kind in zip(cols[1:], ("approve", "reject"), strict=True):
            if col.button(kind.title(), key=f"{kind}-{a.id}"):
                try:
                    reads.client.command({"kind": kind, "target": a.target,
                                          "comment": f"from the dashboard ({a.id})"})
                    Reads.forget()
                    st.success(f"{kind} sent for {a.target}")
                except (QueryError, StoreError) as exc:
                    st.error(f"Not sent: {exc}")
    if not found.actions:
        st.info("No actions in the last 24 hours of fabric time.")
        return
    outcomes = sorted({a.outcome for a in found.actions})
    chosen = st.multiselect("Outcome", outcomes, default=outcomes, key="act-outcomes")
    shown = [a for a in found.actions if a.outcome in chosen]
    st.dataframe(table(shown, now), hide_index=True)
    st.caption(f"{len(shown)} of {len(found.actions)} actions since "
               f"{clock_time(found.start_ns)}")
