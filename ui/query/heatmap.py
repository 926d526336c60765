"""The heat map of the ports that matter: utilisation, PFC pauses each way, time paused, ECN marks
and errors for every connected port, ranked by one of them, narrowed to a group or a switch and
by a search, so 81,920 ports become the few dozen a person should look at.

Values come from one :class:`~ui.query.snapshot.PortSnapshot`; a column's ``high`` is where its
colour saturates (the dashboard colours on a log scale up to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import QueryError
from ui.query.fabric_index import FabricIndex
from ui.query.snapshot import PortSnapshot
from ui.query.views import LEVELS, Clock, EntityStatus, HeatColumn, HeatMap, HeatRow, Level


@dataclass(frozen=True)
class HeatSpec:
    key: str
    title: str
    unit: str
    high: float


HEAT: tuple[HeatSpec, ...] = (
    HeatSpec("util", "Utilisation", "%", 100.0),
    HeatSpec("pfc_rx", "PFC received", "pauses/s", 10_000.0),
    HeatSpec("pfc_tx", "PFC sent", "pauses/s", 10_000.0),
    HeatSpec("paused", "Time paused", "% of time", 100.0),
    HeatSpec("ecn", "ECN marked", "packets/s", 100_000.0),
    HeatSpec("errors", "FCS + symbol errors", "per s", 1_000.0),
)
HEAT_KEYS: tuple[str, ...] = tuple(h.key for h in HEAT)
#: the most rows one answer carries
MAX_ROWS = 500


def heat_values(snapshot: PortSnapshot, index: FabricIndex) -> dict[str, NDArray[np.float64]]:
    """Every column for every port (NaN: not reported)."""
    v = snapshot.values
    return {"util": snapshot.util(index) * 100.0, "pfc_rx": v["pfc_rx"], "pfc_tx": v["pfc_tx"],
            "paused": v["paused_us"] / 1e4, "ecn": v["ecn"], "errors": v["errors"]}


def scope_ports(index: FabricIndex, scope: str) -> NDArray[np.int64]:
    """The ports of the fabric (""), a group (``z3``, ``agg``, ``fabric``) or one switch."""
    if not scope:
        return np.arange(len(index.port_names), dtype=np.int64)
    group = index.group(scope)
    if group is not None:
        member = np.zeros(len(index.switches), bool)
        member[list(group.switches)] = True
        return np.nonzero(member[index.port_switch])[0].astype(np.int64)
    s = index.switch_idx.get(scope)
    if s is None:
        raise QueryError(f"scope: {scope!r} is neither a group ("
                         f"{', '.join(g.id for g in index.groups)}) nor a switch of the fabric")
    return index.switch_ports[s].astype(np.int64)


def port_level(index: FabricIndex, i: int,
               statuses: Mapping[str, EntityStatus]) -> tuple[Level, EntityStatus | None]:
    """The worse of the port's own status and its entity's."""
    found = [s for s in (statuses.get(index.port_entities[i]), statuses.get(index.port_label(i)))
             if s is not None]
    if not found:
        return "ok", None
    worst = min(found, key=lambda s: LEVELS.index(s.level))
    return worst.level, worst


def peer_of(index: FabricIndex, i: int) -> str:
    peer = int(index.port_peer[i])
    return index.switches[peer] if peer >= 0 else index.port_entities[i]


def heat_map(index: FabricIndex, snapshot: PortSnapshot, statuses: Mapping[str, EntityStatus],
             clock: Clock, scope: str = "", sort: str = "pfc_rx", search: str = "",
             top: int = 50) -> HeatMap:
    if sort not in HEAT_KEYS:
        raise QueryError(f"sort: {sort!r} is not one of {', '.join(HEAT_KEYS)}")
    if not 1 <= top <= MAX_ROWS:
        raise QueryError(f"top: {top} is outside 1..{MAX_ROWS}")
    ports = scope_ports(index, scope)
    total = len(ports)
    needle = search.strip().lower()
    if needle:
        keep = [i for i in ports.tolist()
                if needle in index.port_label(i).lower()
                or needle in index.port_entities[i].lower() or needle in peer_of(index, i).lower()]
        ports = np.asarray(keep, np.int64)
    values = heat_values(snapshot, index)
    key = values[sort][ports]
    bad = np.array([LEVELS.index(port_level(index, i, statuses)[0]) for i in ports.tolist()],
                   np.int64) if statuses else np.full(len(ports), LEVELS.index("ok"), np.int64)
    # the highest first, unreported last; then the worse level; then port order
    order = np.lexsort((ports, bad, np.where(np.isnan(key), np.inf, -key)))
    chosen = ports[order[:top]]
    rows = []
    for i in chosen.tolist():
        level, _ = port_level(index, i, statuses)
        rows.append(HeatRow(
            port=index.port_label(i), group=index.group_of[index.port_switch[i]],
            entity=index.port_entities[i], peer=peer_of(index, i), level=level,
            values=[_num(values[h.key][i]) for h in HEAT]))
    return HeatMap(clock=clock, as_of_ns=snapshot.as_of_ns, source=snapshot.source,
                   scope=scope or "fabric", sort=sort, search=search,
                   columns=[HeatColumn(key=h.key, title=h.title, unit=h.unit, high=h.high)
                            for h in HEAT],
                   rows=rows, matched=len(ports), ports=total)


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)
