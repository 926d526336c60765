"""The store's record of LLDP neighbours: one row per change of what a port shows
(:class:`~pipeline.topology.neighbors.NeighborChange`, table ``neighbors`` of
:mod:`pipeline.store.schema`), and the fabric's neighbours at any time T read back from it.

Rows are keyed by (device, port, event time) in a ``ReplacingMergeTree``, so a change recorded
twice (a redelivered report) collapses; reads take, per port, the row with the latest time at or
before T (``argMax``), which a repeat cannot change. The table is kept as long as the store
itself: a port whose neighbour never changed has one row, however old.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.store.base import Store
from pipeline.store.schema import NEIGHBORS
from pipeline.topology.neighbors import NeighborChange

_FIELDS = ("present", "chassis_id", "chassis_id_type", "port_id", "port_id_type",
           "port_description", "system_name")


def neighbor_columns(changes: Sequence[NeighborChange]) -> dict[str, list[Any]]:
    """Changes as the ``neighbors`` table's logical columns (times in ns)."""
    out: dict[str, list[Any]] = {"ts": [c.ts_ns for c in changes]}
    for col in NEIGHBORS.column_names()[1:]:
        out[col] = [int(getattr(c, col)) if col == "present" else getattr(c, col)
                    for c in changes]
    return out


def neighbors_at(store: Store, at_ns: int | None = None, present_only: bool = True
                 ) -> list[NeighborChange]:
    """What every port showed at ``at_ns`` (now, when None): each port's latest change at or
    before it; ports that showed nothing then are left out unless ``present_only`` is False."""
    d = store.dialect
    where = "" if at_ns is None else f"WHERE {d.time_cmp('ts')} <= {d.ns_to_time(at_ns)}"
    picks = ", ".join(f"argMax({f}, t) AS {f}" for f in _FIELDS)
    rows = store.query(
        f"SELECT device, port, max(t) AS ts_ns, {picks} FROM "
        f"(SELECT device, port, {d.time_ns('ts')} AS t, {', '.join(_FIELDS)} "
        f"FROM {store.database}.{NEIGHBORS.name} {where}) "
        f"GROUP BY device, port ORDER BY device, port")
    out = []
    for i in range(len(rows["device"])):
        change = NeighborChange(
            ts_ns=int(rows["ts_ns"][i]), device=str(rows["device"][i]),
            port=str(rows["port"][i]), present=bool(rows["present"][i]),
            **{f: str(rows[f][i]) for f in _FIELDS if f != "present"})
        if change.present or not present_only:
            out.append(change)
    return out


def changes_between(store: Store, lo_ns: int, hi_ns: int) -> list[NeighborChange]:
    """Every recorded change with ``lo_ns <= ts < hi_ns``, in time order (repeats collapsed)."""
    d = store.dialect
    rows = store.query(
        f"SELECT DISTINCT device, port, {d.time_ns('ts')} AS ts_ns, {', '.join(_FIELDS)} "
        f"FROM {store.database}.{NEIGHBORS.name} "
        f"WHERE {' AND '.join(d.time_range('ts', lo_ns, hi_ns))} "
        f"ORDER BY ts_ns, device, port")
    return [NeighborChange(ts_ns=int(rows["ts_ns"][i]), device=str(rows["device"][i]),
                           port=str(rows["port"][i]), present=bool(rows["present"][i]),
                           **{f: str(rows[f][i]) for f in _FIELDS if f != "present"})
            for i in range(len(rows["device"]))]
