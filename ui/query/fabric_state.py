"""The fabric's current state for the read side: the status (who is not ok, the level counts, the
busiest links, whether telemetry is live), the fabric in its hierarchy with an incident's pause
tree, and the heat map, all from a few small reads shared by every request.

The reads, and how often they run whatever the number of readers:

* the firing alerts (one state query of the alerts table): at most every ``status_cache_s``;
* which devices are reporting (:func:`ui.query.snapshot.live_devices`: the last
  ``stale_after`` of samples): at most every ``live_cache_s``;
* every port's measures (:class:`~ui.query.snapshot.PortSnapshot`): once per minute the rollup
  rolls (and again after ``rolled_cache_s``), when the store keeps it; else at most every
  ``utilisation_cache_s``.

So ``/v1/status``, ``/v1/fabric`` and ``/v1/heatmap`` cost array work over the topology's index
(:mod:`ui.query.fabric_index`) once those are read. Without a topology the status is what
telemetry shows (devices seen, alerts), and the fabric view and heat map are refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.errors import QueryError
from pipeline.store.base import Store
from pipeline.store.rollup.read import recent_watermarks
from pipeline.store.schema import Rollup
from pipeline.topology.model import Topology
from ui.query import params as p
from ui.query.alerts import AlertFilter, group_incidents, rows_to_alerts, state_sql
from ui.query.clock import FabricClock
from ui.query.drained import read_drained
from ui.query.fabric_index import FabricIndex, index_of
from ui.query.health import Rolled, groups_worst_first, roll_up
from ui.query.heatmap import HEAT_KEYS, heat_map, heat_values, peer_of, port_level
from ui.query.pause_tree import pause_tree
from ui.query.snapshot import (
    PortSnapshot,
    live_devices,
    read_rollup,
    read_samples,
    seen_devices,
)
from ui.query.status import entity_statuses, level_counts
from ui.query.views import (
    LEVELS,
    AlertView,
    Clock,
    Drained,
    EntityStatus,
    FabricStatus,
    FabricView,
    HeatMap,
    PauseTree,
    PortHealth,
    SwitchHealth,
    Telemetry,
    TopologyView,
    Utilisation,
)

NS = p.NS


@dataclass(frozen=True)
class StatusOptions:
    """Windows of the fabric status, in event time (wall seconds for silence and caches)."""

    utilisation_window_ns: int = 30 * NS
    stale_after_ns: int = 60 * NS
    seen_window_ns: int = 3600 * NS
    silent_after_s: float = 30.0
    status_cache_s: float = 1.0
    live_cache_s: float = 2.0
    seen_cache_s: float = 30.0
    maintenance_window_ns: int = 600 * NS
    utilisation_cache_s: float = 5.0
    #: a rolled minute's port values are reused this long (until the watermark moves; a
    #: minute rolled again for late samples is read again after this)
    rolled_cache_s: float = 60.0


@dataclass(frozen=True)
class _Now:
    """One moment's reads: what every answer about the present is computed from."""

    clock: Clock
    telemetry: Telemetry
    firing: list[AlertView]
    statuses: list[EntityStatus]
    drained: list[Drained]
    index: FabricIndex | None
    snapshot: PortSnapshot | None


class _Cached:
    """A value recomputed at most every ``max_age_s`` (or when its key changes), one computation
    at a time: concurrent readers wait for it rather than repeat it."""

    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._value: tuple[float, Any, Any] | None = None

    def get(self, make: Callable[[], Any], key: Any = None) -> Any:
        with self._lock:
            hit = self._value
            if hit is not None and hit[1] == key and time.monotonic() - hit[0] < self.max_age_s:
                return hit[2]
            value = make()
            self._value = (time.monotonic(), key, value)
            return value


class FabricState:
    def __init__(self, store: Store, topology: Callable[[], Topology | None], clock: FabricClock,
                 rollups: Callable[[], list[Rollup]], limits: p.Limits,
                 options: StatusOptions) -> None:
        self.store = store
        self._topology = topology
        self.clock = clock
        self._rollups = rollups
        self.limits = limits
        self.options = options
        self._now = _Cached(options.status_cache_s)
        self._live = _Cached(options.live_cache_s)
        self._seen = _Cached(options.seen_cache_s)
        self._rolled = _Cached(options.rolled_cache_s)
        self._recent = _Cached(options.utilisation_cache_s)
        self._status = _Cached(options.status_cache_s)

    # -- the reads ------------------------------------------------------------------------------

    def live(self, now_ns: int) -> dict[str, int]:
        """Device → newest sample time, for those heard from within ``stale_after``."""
        found: dict[str, int] = self._live.get(
            lambda: live_devices(self.store, now_ns, self.options.stale_after_ns))
        return found

    def seen(self, now_ns: int) -> dict[str, int]:
        """Device → newest sample time, for those heard from within ``seen_window`` (as far as
        the rollup has rolled) or right now."""
        minute = next((r for r in self._rollups() if r.bucket_s == 60), None)
        found: dict[str, int] = dict(self._seen.get(lambda: seen_devices(
            self.store, minute, now_ns - self.options.seen_window_ns)))
        for dev, last in self.live(now_ns).items():
            found[dev] = max(found.get(dev, 0), last)
        return found

    def snapshot(self, index: FabricIndex, now_ns: int) -> PortSnapshot:
        """Every port's measures: the rollup's newest rolled minute (read once per minute
        rolled), else the samples' latest rates (read at most every ``utilisation_cache_s``)."""
        minute = next((r for r in self._rollups() if r.bucket_s == 60), None)
        mark = recent_watermarks(self.store).get(minute.name, 0) if minute is not None else 0
        snap: PortSnapshot
        if minute is not None and mark > 0:
            bucket = mark - minute.bucket_ns
            snap = self._rolled.get(lambda: read_rollup(self.store, minute, bucket, index),
                                    key=(id(index), bucket))
        else:
            snap = self._recent.get(lambda: read_samples(
                self.store, now_ns, self.options.utilisation_window_ns, index), key=id(index))
        return snap

    def telemetry(self, clock: Clock, index: FabricIndex | None,
                  snapshot: PortSnapshot | None) -> Telemetry:
        """Live, silent or empty; the switches reporting (now, or in the port values' minute);
        the switches of the topology that stopped (none heard from within ``stale_after``)."""
        live = self.live(clock.now_ns)
        seen = set(live)
        if index is not None and snapshot is not None:
            seen.update(index.switches[i] for i in np.nonzero(snapshot.switch_last_ns)[0])
        expected = list(index.switches) if index is not None else sorted(seen)
        stale = [dev for dev in expected if dev not in live]
        silent = self.clock.silent_s()
        state: Any = "empty" if clock.latest_sample_ns is None else (
            "silent" if silent is not None and silent > self.options.silent_after_s else "live")
        return Telemetry(state=state, latest_ns=clock.latest_sample_ns, silent_s=silent,
                         devices_seen=len(seen), stale_devices=stale)

    def drained(self, now_ns: int) -> list[Drained]:
        """Links drained and hosts isolated on purpose: the maintenance records of the last
        ``maintenance_window`` folded by :class:`pipeline.maintenance.MaintenanceBook` (an open
        one is re-published every minute, so a window of a few minutes sees every one)."""
        return read_drained(self.store, now_ns - self.options.maintenance_window_ns, now_ns,
                            self.limits.max_rows)

    def now(self) -> _Now:
        made: _Now = self._now.get(self._read_now)
        return made

    def _read_now(self) -> _Now:
        clock = self.clock.now()
        topology = self._topology()
        index = index_of(topology) if topology is not None else None
        snapshot = self.snapshot(index, clock.now_ns) if index is not None else None
        telemetry = self.telemetry(clock, index, snapshot)
        firing = rows_to_alerts(self.store.query(
            state_sql(self.store, None, AlertFilter(), firing_only=True,
                      limit=self.limits.max_rows * 4)))
        drained = self.drained(clock.now_ns)
        statuses = entity_statuses(firing, topology, telemetry.stale_devices
                                   if telemetry.state == "live" else [], drained,
                                   owners=index.label_entity if index is not None else None)
        return _Now(clock, telemetry, firing, statuses, drained, index, snapshot)

    # -- the answers ----------------------------------------------------------------------------

    def status(self, top: int, utilisation: Callable[[int], list[Utilisation]]) -> FabricStatus:
        """``utilisation`` answers the busiest links when there is no topology to index."""
        if not 0 <= top <= 1000:
            raise QueryError(f"top: {top} is outside 0..1000")
        answer: FabricStatus = self._status.get(lambda: self._status_now(top, utilisation),
                                                key=top)
        return answer

    def _status_now(self, top: int,
                    utilisation: Callable[[int], list[Utilisation]]) -> FabricStatus:
        now = self.now()
        topology = now.index.topology if now.index is not None else None
        if now.index is not None and now.snapshot is not None:
            busiest = _busiest(now.index, now.snapshot, top) if top else []
        else:
            busiest = utilisation(top) if top else []
        seen = [] if topology is not None else sorted(self.live(now.clock.now_ns))
        return FabricStatus(clock=now.clock, telemetry=now.telemetry,
                            counts=level_counts(now.statuses, topology, seen),
                            entities=now.statuses, top_utilisation=busiest, drained=now.drained)

    def devices_seen(self) -> list[tuple[str, int]]:
        """``(device, newest sample ns)`` of the devices heard from in ``seen_window``."""
        return sorted(self.seen(self.clock.now().now_ns).items())

    def _indexed(self) -> tuple[_Now, FabricIndex, PortSnapshot]:
        now = self.now()
        if now.index is None or now.snapshot is None:
            raise QueryError("the fabric view needs the topology, which this API does not know "
                             "(set topology in the config)")
        return now, now.index, now.snapshot

    def fabric(self, group: str | None = None, switch: str | None = None,
               incident: str | None = None) -> FabricView:
        now, index, snap = self._indexed()
        rolled = roll_up(index, now.statuses, now.drained)
        groups = groups_worst_first(index, rolled)
        sw = None
        if switch:
            s = index.switch_idx.get(p.check_name(switch, "switch"))
            if s is None:
                raise QueryError(f"switch: {switch!r} is not a switch of the fabric")
            sw = s
            group = index.group_of[s]
        chosen = None
        if group:
            chosen = next((g for g in groups if g.id == group), None)
            if chosen is None:
                raise QueryError(f"group: {group!r} is not one of "
                                 f"{', '.join(g.id for g in index.groups)}")
        found = index.group(chosen.id) if chosen is not None else None
        members = found.switches if found is not None else tuple(range(len(index.switches)))
        healths = switch_health(index, rolled, snap, members)
        tree = self._tree(index, now, incident) if incident else None
        scope: Any = "switch" if sw is not None else ("group" if chosen is not None else "fabric")
        return FabricView(
            clock=now.clock, tiers=index.tiers, scope=scope, groups=groups, group=chosen,
            switches=healths,
            switch=next((h for h in healths if sw is not None and h.name == index.switches[sw]),
                        None),
            ports=_ports(index, snap, now, sw) if sw is not None else [], tree=tree,
            as_of_ns=snap.as_of_ns)

    def _tree(self, index: FabricIndex, now: _Now, fingerprint: str) -> PauseTree:
        fingerprint = p.check_name(fingerprint, "fingerprint")
        incidents, _ = group_incidents(now.firing)
        found = next((i for i in incidents if i.fingerprint == fingerprint), None)
        if found is None:
            raise QueryError(f"incident: no firing incident has fingerprint {fingerprint!r}")
        return pause_tree(found, found.symptoms, index)

    def heatmap(self, scope: str = "", sort: str = "pfc_rx", search: str = "",
                top: int = 50) -> HeatMap:
        if sort not in HEAT_KEYS:
            raise QueryError(f"sort: {sort!r} is not one of {', '.join(HEAT_KEYS)}")
        now, index, snap = self._indexed()
        by_entity = {s.entity: s for s in now.statuses}
        return heat_map(index, snap, by_entity, now.clock, scope=scope, sort=sort, search=search,
                        top=top)

    def topology_view(self) -> TopologyView:
        devices = [d for d, _ in self.devices_seen()]
        topology = self._topology()
        if topology is None:
            return TopologyView(known=False, spines=[], leaves=[], links=[], hosts=[],
                                devices=devices)
        data = topology.to_json()
        return TopologyView(known=True, spines=data["spines"], leaves=data["leaves"],
                            links=data["links"], hosts=data["hosts"], devices=devices)


def switch_health(index: FabricIndex, rolled: Rolled, snap: PortSnapshot,
                   members: tuple[int, ...]) -> list[SwitchHealth]:
    util = snap.util(index)
    n = len(index.switches)
    busiest = np.full(n, np.nan)
    has = ~np.isnan(util)
    np.fmax.at(busiest, index.port_switch[has], util[has])
    pfc = np.zeros(n)
    rx = snap.values["pfc_rx"]
    np.add.at(pfc, index.port_switch[~np.isnan(rx)], rx[~np.isnan(rx)])
    reported = np.zeros(n, bool)
    reported[index.port_switch[~np.isnan(rx)]] = True
    return [SwitchHealth(
        name=index.switches[s], role=index.roles[s], group=index.group_of[s],
        level=LEVELS[int(rolled.level[s])], worst=rolled.worst[s],
        problems=int(rolled.problems[s]), drained=int(rolled.drained[s]),
        util=None if np.isnan(busiest[s]) else float(busiest[s]),
        pfc_rx=float(pfc[s]) if reported[s] else None) for s in members]


def _ports(index: FabricIndex, snap: PortSnapshot, now: _Now, s: int) -> list[PortHealth]:
    values = heat_values(snap, index)
    by_entity = {e.entity: e for e in now.statuses}
    drained = {d.target: d.summary for d in now.drained}
    out = []
    for i in index.switch_ports[s].tolist():
        level, worst = port_level(index, i, by_entity)
        out.append(PortHealth(
            port=index.port_label(i), entity=index.port_entities[i], peer=peer_of(index, i),
            level=level, alert=worst.alert if worst is not None else "",
            drained=drained.get(index.port_entities[i]),
            values={k: (None if np.isnan(values[k][i]) else float(values[k][i]))
                    for k in HEAT_KEYS}))
    return out


def _busiest(index: FabricIndex, snap: PortSnapshot, top: int) -> list[Utilisation]:
    """The ``top`` busiest links and hosts (an entity at its busier end)."""
    util = snap.util(index)
    order = np.argsort(np.where(np.isnan(util), -np.inf, -util), kind="stable")
    out: list[Utilisation] = []
    taken: set[str] = set()
    for i in order.tolist():
        if len(out) >= top or np.isnan(util[i]):
            break
        entity = index.port_entities[i]
        if entity in taken:
            continue
        taken.add(entity)
        out.append(Utilisation(
            entity=entity, device=index.switches[index.port_switch[i]],
            port=index.port_names[i], in_gbps=_gbps(snap.values["in_bps"][i]),
            out_gbps=_gbps(snap.values["out_bps"][i]), util=float(util[i])))
    return out


def _gbps(bytes_per_s: float) -> float:
    return 0.0 if np.isnan(bytes_per_s) else float(bytes_per_s) * 8 / 1e9
