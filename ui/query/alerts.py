"""Alert reads: the state of every alert now or at a time T, episodes in a range, incidents.

The ``alerts`` table holds one row per state change (``updated``). An alert's state at T is its
latest row with ``updated <= T`` (ties: ``resolved`` wins, it is the later word); it is active at T
when that row says ``firing``. An episode is one ``(fingerprint, starts)``: an alert that resolved
and fired again is two episodes. A row delivered twice is the same key and collapses either way.

An incident is a root-cause alert (``root_cause``); a symptom is not. An incident's symptoms are
the firing symptoms it names in ``explains`` or that name it in ``inhibited_by``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.store.base import Columns, Store, literal
from ui.query.views import AlertView, Incident

_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class AlertFilter:
    names: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    root_cause: bool | None = None
    fingerprint: str | None = None

    def inner(self) -> list[str]:
        """Conditions on a row's identity (the same for every row of a fingerprint)."""
        out = []
        if self.names:
            out.append(f"name IN ({', '.join(literal(n) for n in self.names)})")
        if self.entities:
            out.append(f"entity IN ({', '.join(literal(e) for e in self.entities)})")
        if self.fingerprint:
            out.append(f"fingerprint = {literal(self.fingerprint)}")
        return out

    def outer(self) -> list[str]:
        """Conditions on the state a row records (may change between rows of one alert)."""
        out = []
        if self.severities:
            out.append(f"severity IN ({', '.join(literal(s) for s in self.severities)})")
        if self.root_cause is not None:
            out.append(f"root_cause = {literal(self.root_cause)}")
        return out


def _select(store: Store) -> str:
    d = store.dialect
    return (
        f"fingerprint, name, entity, severity, status, root_cause, confidence, "
        f"{d.time_ns('starts')} AS starts_t, {d.time_ns('updated')} AS updated_t, "
        f"{d.time_ns('ends')} AS ends_t, ports, explains, inhibited_by, source, labels, "
        f"annotations, evidence"
    )


def _where(conds: Sequence[str]) -> str:
    return f" WHERE {' AND '.join(conds)}" if conds else ""


def state_sql(store: Store, at_ns: int | None, flt: AlertFilter, firing_only: bool,
              limit: int) -> str:
    """Each alert's latest row (at ``at_ns`` when given), optionally only the firing ones."""
    d = store.dialect
    conds = flt.inner()
    if at_ns is not None:
        conds.append(f"{d.time_cmp('updated')} <= {d.ns_to_time(at_ns)}")
    inner = (f"SELECT {_select(store)} FROM {store.database}.alerts{_where(conds)} "
             f"ORDER BY fingerprint, updated_t DESC, status DESC LIMIT 1 BY fingerprint")
    outer = flt.outer()
    if firing_only:
        outer.append("status = 'firing'")
    return (f"SELECT * FROM ({inner}){_where(outer)} "
            f"ORDER BY root_cause DESC, starts_t DESC, fingerprint LIMIT {int(limit)}")


def episodes_sql(store: Store, start_ns: int, end_ns: int, flt: AlertFilter, limit: int) -> str:
    """Every episode active at some time in ``[start, end]``, its state as of ``end``."""
    d = store.dialect
    conds = [*flt.inner(), f"{d.time_cmp('updated')} <= {d.ns_to_time(end_ns)}"]
    inner = (f"SELECT {_select(store)} FROM {store.database}.alerts{_where(conds)} "
             f"ORDER BY fingerprint, starts_t, updated_t DESC, status DESC "
             f"LIMIT 1 BY fingerprint, starts_t")
    outer = [*flt.outer(), f"starts_t <= {int(end_ns)}",
             f"(status = 'firing' OR ends_t >= {int(start_ns)})"]
    return (f"SELECT * FROM ({inner}){_where(outer)} "
            f"ORDER BY starts_t DESC, fingerprint LIMIT {int(limit)}")


def rows_to_alerts(cols: Columns) -> list[AlertView]:
    n = len(cols.get("fingerprint", ()))
    out: list[AlertView] = []
    for i in range(n):
        ends = int(cols["ends_t"][i])
        status = str(cols["status"][i])
        out.append(AlertView(
            fingerprint=str(cols["fingerprint"][i]), name=str(cols["name"][i]),
            entity=str(cols["entity"][i]), severity=str(cols["severity"][i]),
            status="resolved" if status == "resolved" else "firing",
            root_cause=bool(cols["root_cause"][i]), confidence=float(cols["confidence"][i]),
            starts_ns=int(cols["starts_t"][i]), updated_ns=int(cols["updated_t"][i]),
            ends_ns=ends if ends > 0 else None,
            ports=[str(p) for p in _seq(cols["ports"][i])],
            explains=[str(p) for p in _seq(cols["explains"][i])],
            inhibited_by=str(cols["inhibited_by"][i]) or None, source=str(cols["source"][i]),
            labels={str(k): str(v) for k, v in _json(cols["labels"][i]).items()},
            annotations={str(k): str(v) for k, v in _json(cols["annotations"][i]).items()},
            evidence={str(k): float(v) for k, v in _json(cols["evidence"][i]).items()
                      if isinstance(v, (int, float))},
        ))
    return out


def _seq(value: Any) -> list[Any]:
    return list(value) if value is not None else []


def _json(text: Any) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def severity_rank(severity: str) -> int:
    return _SEVERITY_RANK.get(severity, len(_SEVERITY_RANK))


def group_incidents(alerts: Sequence[AlertView]) -> tuple[list[Incident], list[AlertView]]:
    """Incidents (worst first) with the symptoms they explain, and the unexplained symptoms."""
    incidents = [a for a in alerts if a.root_cause]
    symptoms = [a for a in alerts if not a.root_cause]
    claimed: set[str] = set()
    out: list[Incident] = []
    for inc in incidents:
        mine = [s for s in symptoms
                if s.inhibited_by == inc.fingerprint or s.fingerprint in inc.explains]
        claimed.update(s.fingerprint for s in mine)
        out.append(Incident(**inc.model_dump(), symptoms=mine))
    out.sort(key=lambda i: (severity_rank(i.severity), -i.starts_ns))
    return out, [s for s in symptoms if s.fingerprint not in claimed]
