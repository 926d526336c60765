"""Action reads: the audit trail of notifications, drains, undrains and TE notices, newest first.

Every action result has a unique ``id``; a result delivered twice collapses to one row here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pipeline.store.base import Columns, Store, literal
from ui.query.views import ActionView


@dataclass(frozen=True)
class ActionFilter:
    actions: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    alert_fingerprint: str | None = None

    def conditions(self) -> list[str]:
        out = []
        for column, values in (("action", self.actions), ("target", self.targets),
                               ("outcome", self.outcomes), ("mode", self.modes)):
            if values:
                out.append(f"{column} IN ({', '.join(literal(v) for v in values)})")
        if self.alert_fingerprint:
            out.append(f"alert_fingerprint = {literal(self.alert_fingerprint)}")
        return out


def actions_sql(store: Store, start_ns: int, end_ns: int, flt: ActionFilter, limit: int) -> str:
    d = store.dialect
    at = d.time_cmp("at")
    conds = [f"{at} >= {d.ns_to_time(start_ns)}", f"{at} <= {d.ns_to_time(end_ns)}",
             *flt.conditions()]
    return (f"SELECT {d.time_ns('at')} AS at_t, id, action, target, alert_fingerprint, alert_name, "
            f"mode, outcome, detail, steps FROM {store.database}.actions "
            f"WHERE {' AND '.join(conds)} ORDER BY at_t DESC, id LIMIT 1 BY id "
            f"LIMIT {int(limit)}")


def rows_to_actions(cols: Columns) -> list[ActionView]:
    out: list[ActionView] = []
    for i in range(len(cols.get("id", ()))):
        out.append(ActionView(
            id=str(cols["id"][i]), at_ns=int(cols["at_t"][i]), action=str(cols["action"][i]),
            target=str(cols["target"][i]), alert_fingerprint=str(cols["alert_fingerprint"][i]),
            alert_name=str(cols["alert_name"][i]), mode=str(cols["mode"][i]),
            outcome=str(cols["outcome"][i]), detail=str(cols["detail"][i]),
            steps=_steps(cols["steps"][i]),
        ))
    return out


def _steps(text: Any) -> list[dict[str, Any]]:
    try:
        data = json.loads(text) if text else []
    except (TypeError, ValueError):
        return []
    return [s for s in data if isinstance(s, dict)] if isinstance(data, list) else []
