"""The one read-side query layer: every reader (the API, hence the dashboard and the CLI) asks here.

:class:`Query` validates a request (:mod:`ui.query.params`), builds its SQL through the store's
dialect
(:mod:`ui.query.series`, :mod:`ui.query.alerts`, :mod:`ui.query.actions`, :mod:`ui.query.latest`),
runs it on a
:class:`pipeline.store.base.Store` and returns a view (:mod:`ui.query.views`). Nothing else in
``ui`` touches
the store. Invalid requests raise :class:`pipeline.errors.QueryError` before any SQL exists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import QueryError, StoreError
from pipeline.metrics import Metric
from pipeline.store.base import Store, literal
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import ROLLUPS, Rollup
from pipeline.topology.model import Topology
from ui.query import params as p
from ui.query.actions import ActionFilter, actions_sql, rows_to_actions
from ui.query.alerts import AlertFilter, episodes_sql, group_incidents, rows_to_alerts, state_sql
from ui.query.clock import FabricClock
from ui.query.latest import LatestRow, latest
from ui.query.rollup_series import SOURCES, pick_rollup, rollup_sql, rollup_values
from ui.query.series import GAUGE_AGGS, SeriesRequest, Triple, build_result, raw_values
from ui.query.status import entity_statuses, level_counts, utilisation
from ui.query.views import (
    ActionList,
    AlertList,
    AlertView,
    Clock,
    FabricStatus,
    Health,
    IncidentList,
    LatestList,
    LatestValue,
    SeriesSet,
    Telemetry,
    TopologyView,
)

NS = p.NS
Names = str | Sequence[str] | None


@dataclass(frozen=True)
class StatusOptions:
    """Windows of the fabric status, in event time (wall seconds for silence)."""

    utilisation_window_ns: int = 30 * NS
    stale_after_ns: int = 60 * NS
    seen_window_ns: int = 3600 * NS
    silent_after_s: float = 30.0
    status_cache_s: float = 1.0
    utilisation_cache_s: float = 5.0


class Query:
    """Read-side queries over one store (and the fabric's topology, when known)."""

    def __init__(self, store: Store,
                 topology: Topology | Callable[[], Topology | None] | None = None,
                 limits: p.Limits | None = None, options: StatusOptions | None = None,
                 wall: Callable[[], int] = time.time_ns) -> None:
        self.store = store
        # the platform learns its topology at some point: a callable reads the current one
        self._topology = topology if callable(topology) else (lambda: topology)
        self.limits = limits or p.Limits.for_store(store.settings)
        self.options = options or StatusOptions()
        self.clock = FabricClock(store, wall, silent_after_s=self.options.silent_after_s)
        self._devices_lock = threading.Lock()
        self._devices: tuple[float, list[tuple[str, int]]] = (0.0, [])
        self._rollups: list[Rollup] | None = None
        self._status_lock = threading.Lock()
        self._status: tuple[float, int, FabricStatus | None] = (0.0, 0, None)
        self._util: tuple[float, list[LatestRow]] = (0.0, [])

    @property
    def topology(self) -> Topology | None:
        return self._topology()

    # -- series ---------------------------------------------------------------------------------

    def series(self, device: str, port: str, metrics: Names, qual: int | str | None = None,
               start: str | int | None = None, end: str | int | None = None,
               step: str | int | float | None = None, agg: str | None = None,
               source: str | None = None) -> SeriesSet:
        """One port's metrics over a range; counters as per-second rates, gauges by ``agg``.

        ``source`` is ``auto`` (raw samples for recent ranges, rollups for long or old ones),
        ``raw``, ``1m`` or ``1h``."""
        device = p.check_name(device, "device")
        port = p.check_name(port, "port")
        names = _names(metrics)
        if not names:
            raise QueryError("metric: name at least one metric")
        if len(names) > 16:
            raise QueryError(f"metric: at most 16 metrics per request, got {len(names)}")
        how_source = p.check_choice(source or "auto", SOURCES, "source")
        catalog = [p.check_metric(name) for name in names]
        if len(set(names)) != len(names):
            raise QueryError("metric: a metric is named twice")
        clock = self.clock.now()
        rng = p.parse_range(start, end, clock.now_ns, self.limits)
        step_ns = p.parse_step(step, rng.span_ns, self.limits)
        buckets = rng.end_ns // step_ns - rng.start_ns // step_ns + 1
        series_count = 0
        counters: list[Metric] = []
        gauges: list[Metric] = []
        q: int | None = None
        for metric in catalog:
            q = p.check_qual(qual, metric)
            series_count += 8 if metric.qualifier is not None and q is None else 1
            (counters if p.is_counter(metric) else gauges).append(metric)
        # agg is for gauges; counters are always per-second rates
        if not gauges and agg not in (None, "", "rate"):
            raise QueryError(f"agg: {counters[0].name} is a counter, served as a per-second "
                             f"rate; drop agg or use agg=rate")
        how = p.check_choice(agg or "mean", tuple(GAUGE_AGGS), "agg") if gauges else "rate"
        p.check_points(buckets, series_count, step_ns, self.limits)
        rollup = pick_rollup(how_source, rng.span_ns, step_ns, rng.start_ns, clock.now_ns,
                             self.limits, self.rollups())
        p.check_kept(rng.start_ns, clock.now_ns, self.limits,
                     "raw samples" if rollup is None else f"the {rollup.name} rollup",
                     None if rollup is None else rollup.name)
        # one statement per kind: every counter together, every gauge together
        found: dict[str, Triple] = {}
        requests = [SeriesRequest(device, port, tuple(group), q, rng, step_ns, kind)
                    for group, kind in ((counters, "rate"), (gauges, how)) if group]
        for req in requests:
            if rollup is None:
                found.update(raw_values(self.store, req))
            else:
                found.update(rollup_values(
                    self.store.query(rollup_sql(self.store, rollup, req)), req))
        source_name = rollup.name if rollup is not None else "samples"
        by_metric = {m.name: r for r in requests for m in r.metrics}
        results = [build_result(by_metric[m.name], m, found.get(m.name), source_name)
                   for m in catalog]
        return SeriesSet(clock=clock, results=results)

    def rollups(self) -> list[Rollup]:
        """The rollup tables this store has (asked once)."""
        if self._rollups is None:
            names = ", ".join(literal(r.name) for r in ROLLUPS)
            cols = self.store.query(
                f"SELECT name FROM system.tables WHERE database = {literal(self.store.database)} "
                f"AND name IN ({names})")
            present = {str(n) for n in cols.get("name", ())}
            self._rollups = [r for r in ROLLUPS if r.name in present]
        return self._rollups

    def latest(self, device: str, port: str | None = None, metrics: Names = None,
               window: str | None = None) -> LatestList:
        """Every metric of a switch (or one port): last gauge values and recent counter rates."""
        device = p.check_name(device, "device")
        if port is not None:
            port = p.check_name(port, "port")
        names = [p.check_metric(n).name for n in _names(metrics)]
        window_ns = p.parse_duration(window, "window") if window else \
            self.options.utilisation_window_ns
        if window_ns > 3600 * NS:
            raise QueryError("window: at most 1h")
        clock = self.clock.now()
        rows = latest(self.store, clock.now_ns, window_ns, names, device, port)
        values = []
        for row in rows:
            metric = p.check_metric(row.metric)
            unit = f"{metric.unit}/s" if p.is_counter(metric) else metric.unit
            values.append(LatestValue(port=row.port, metric=row.metric,
                                      qual=None if row.qual < 0 else row.qual, unit=unit,
                                      value=row.value, at_ns=row.at_ns))
        return LatestList(clock=clock, device=device, values=values)

    # -- alerts ---------------------------------------------------------------------------------

    def _alert_filter(self, name: Names, entity: Names, severity: Names,
                      root_cause: bool | None, fingerprint: str | None) -> AlertFilter:
        return AlertFilter(
            names=tuple(p.check_name(n, "name") for n in _names(name)),
            entities=tuple(p.check_name(e, "entity") for e in _names(entity)),
            severities=tuple(p.check_choice(s, ("critical", "warning", "info"), "severity")
                             for s in _names(severity)),
            root_cause=root_cause,
            fingerprint=p.check_name(fingerprint, "fingerprint") if fingerprint else None,
        )

    def alerts(self, at: str | int | None = None, start: str | int | None = None,
               end: str | int | None = None, name: Names = None, entity: Names = None,
               severity: Names = None, root_cause: bool | None = None,
               fingerprint: str | None = None, touching: str | None = None,
               limit: int | None = None) -> AlertList:
        """Alerts active now (no times), active at ``at``, or active at some time in a range."""
        flt = self._alert_filter(name, entity, severity, root_cause, fingerprint)
        lim = p.check_limit(limit, self.limits)
        clock = self.clock.now()
        if at is not None and (start is not None or end is not None):
            raise QueryError("give either at (state at a time) or start/end (a range), not both")
        if start is not None or end is not None:
            rng = p.parse_range(start, end, clock.now_ns, self.limits, default_span_ns=3600 * NS)
            p.check_kept(rng.start_ns, clock.now_ns, self.limits, "alerts")
            sql = episodes_sql(self.store, rng.start_ns, rng.end_ns, flt, lim)
            found = self._touching(rows_to_alerts(self.store.query(sql)), touching)
            return AlertList(clock=clock, mode="range", start_ns=rng.start_ns,
                             end_ns=rng.end_ns, alerts=found)
        at_ns = p.parse_time(at, clock.now_ns, "at") if at is not None else None
        if at_ns is not None:
            p.check_kept(at_ns, clock.now_ns, self.limits, "alerts")
        sql = state_sql(self.store, at_ns, flt, firing_only=True, limit=lim)
        found = self._touching(rows_to_alerts(self.store.query(sql)), touching)
        return AlertList(clock=clock, mode="active" if at_ns is None else "at", at_ns=at_ns,
                         alerts=found)

    def incidents(self, at: str | int | None = None, start: str | int | None = None,
                  end: str | int | None = None, name: Names = None, entity: Names = None,
                  severity: Names = None, touching: str | None = None,
                  limit: int | None = None) -> IncidentList:
        """Root-cause incidents with the symptoms each explains, and the unexplained symptoms."""
        everything = self.alerts(at=at, start=start, end=end, severity=severity,
                                 touching=touching, limit=self.limits.max_rows)
        incidents, unexplained = group_incidents(everything.alerts)
        names = set(_names(name))
        entities = set(_names(entity))
        for n in names:
            p.check_name(n, "name")
        for e in entities:
            p.check_name(e, "entity")
        if names or entities:
            incidents = [i for i in incidents if (not names or i.name in names)
                         and (not entities or i.entity in entities)]
        lim = p.check_limit(limit, self.limits)
        return IncidentList(clock=everything.clock, mode=everything.mode,
                            incidents=incidents[:lim], unexplained=unexplained[:lim])

    def _touching(self, alerts: list[AlertView], device: str | None) -> list[AlertView]:
        """Alerts whose entity or ports involve a switch or host (search by device)."""
        if not device:
            return alerts
        device = p.check_name(device, "device")

        def involves(a: AlertView) -> bool:
            parts = a.entity.replace("#", "~").replace(":", "~").split("~")
            return device in parts or any(port.split(":")[0] == device for port in a.ports)

        return [a for a in alerts if involves(a)]

    # -- actions --------------------------------------------------------------------------------

    def actions(self, start: str | int | None = None, end: str | int | None = None,
                action: Names = None, target: Names = None, outcome: Names = None,
                mode: Names = None, alert_fingerprint: str | None = None,
                limit: int | None = None) -> ActionList:
        """The audit trail in a range (default: the last 24 hours), newest first."""
        clock = self.clock.now()
        rng = p.parse_range(start, end, clock.now_ns, self.limits, default_span_ns=86400 * NS)
        p.check_kept(rng.start_ns, clock.now_ns, self.limits, "actions")
        flt = ActionFilter(
            actions=tuple(p.check_name(a, "action") for a in _names(action)),
            targets=tuple(p.check_name(t, "entity") for t in _names(target)),
            outcomes=tuple(p.check_choice(o, ("done", "refused", "failed", "pending", "skipped"),
                                          "outcome") for o in _names(outcome)),
            modes=tuple(p.check_choice(m, ("dry_run", "approval", "auto"), "mode")
                        for m in _names(mode)),
            alert_fingerprint=(p.check_name(alert_fingerprint, "fingerprint")
                               if alert_fingerprint else None),
        )
        lim = p.check_limit(limit, self.limits)
        cols = self.store.query(actions_sql(self.store, rng.start_ns, rng.end_ns, flt, lim))
        return ActionList(clock=clock, start_ns=rng.start_ns, end_ns=rng.end_ns,
                          actions=rows_to_actions(cols))

    # -- fabric ---------------------------------------------------------------------------------

    def devices_seen(self, now_ns: int) -> list[tuple[str, int]]:
        """``(device, last sample ns)`` for devices heard from in the last hour (cached 2 s)."""
        with self._devices_lock:
            at, cached = self._devices
            if time.monotonic() - at < 2.0:
                return cached
        d = self.store.dialect
        lo = now_ns - self.options.seen_window_ns
        minute = next((r for r in self.rollups() if r.bucket_s == 60), None)
        if minute is not None:
            # the 1-minute rollup: ~60x fewer rows than the samples, the same last times
            rows = rollup_rows(self.store, minute, (), lo - minute.bucket_ns, distinct=False)
            cols = self.store.query(
                f"SELECT device, max(t1) AS last FROM {rows} GROUP BY device ORDER BY device")
        else:
            cols = self.store.query(
                f"SELECT device, max({d.stored('ts')}) AS last FROM {self.store.database}.samples "
                f"WHERE {d.time_cmp('ts')} >= {d.ns_to_time(lo)} GROUP BY device ORDER BY device")
        found = [(str(dev), int(last)) for dev, last in zip(cols.get("device", ()),
                                                            cols.get("last", ()), strict=True)]
        with self._devices_lock:
            self._devices = (time.monotonic(), found)
        return found

    def telemetry(self, clock: Clock) -> Telemetry:
        seen = self.devices_seen(clock.now_ns)
        last = dict(seen)
        topology = self.topology
        expected = list(topology.switches) if topology is not None else list(last)
        stale = [dev for dev in expected
                 if last.get(dev, 0) < clock.now_ns - self.options.stale_after_ns]
        silent = self.clock.silent_s()
        state: Any = "empty" if clock.latest_sample_ns is None else (
            "silent" if silent is not None and silent > self.options.silent_after_s else "live")
        return Telemetry(state=state, latest_ns=clock.latest_sample_ns, silent_s=silent,
                         devices_seen=len(last), stale_devices=stale)

    def status(self, top: int = 20) -> FabricStatus:
        """Every link, host and switch that is not ok, level counts, the busiest links.

        Answers are reused for ``status_cache_s`` (every open dashboard asks every few seconds)."""
        if not 0 <= top <= 1000:
            raise QueryError(f"top: {top} is outside 0..1000")
        with self._status_lock:
            at, cached_top, cached = self._status
            if cached is not None and cached_top == top and \
                    time.monotonic() - at < self.options.status_cache_s:
                return cached
        answer = self._status_now(top)
        with self._status_lock:
            self._status = (time.monotonic(), top, answer)
        return answer

    def _status_now(self, top: int) -> FabricStatus:
        clock = self.clock.now()
        telemetry = self.telemetry(clock)
        firing = rows_to_alerts(self.store.query(
            state_sql(self.store, None, AlertFilter(), firing_only=True,
                      limit=self.limits.max_rows * 4)))
        topology = self.topology
        statuses = entity_statuses(firing, topology, telemetry.stale_devices
                                   if telemetry.state == "live" else [])
        rows = self._utilisation(clock.now_ns) if top else []
        return FabricStatus(
            clock=clock, telemetry=telemetry,
            counts=level_counts(statuses, topology, [d for d, _ in
                                                     self.devices_seen(clock.now_ns)]),
            entities=statuses, top_utilisation=utilisation(rows, topology, top))

    def _utilisation(self, now_ns: int) -> list[LatestRow]:
        """Every port's recent octet rates (cached: it reads the whole fabric)."""
        with self._status_lock:
            at, rows = self._util
            if time.monotonic() - at < self.options.utilisation_cache_s:
                return rows
        minute = next((r for r in self.rollups() if r.bucket_s == 60), None)
        rows = latest(self.store, now_ns, self.options.utilisation_window_ns,
                      ["if_in_octets", "if_out_octets"], rollup=minute)
        with self._status_lock:
            self._util = (time.monotonic(), rows)
        return rows

    def topology_view(self) -> TopologyView:
        clock = self.clock.now()
        devices = [d for d, _ in self.devices_seen(clock.now_ns)]
        topology = self.topology
        if topology is None:
            return TopologyView(known=False, spines=[], leaves=[], links=[], hosts=[],
                                devices=devices)
        data = topology.to_json()
        return TopologyView(known=True, spines=data["spines"], leaves=data["leaves"],
                            links=data["links"], hosts=data["hosts"], devices=devices)

    def health(self, loops: dict[str, dict[str, Any]] | None = None) -> Health:
        """The store's reachability, the clock, and the platform's loops as they report."""
        try:
            self.store.query(f"SELECT {literal(1)} AS one")
            clock: Clock | None = self.clock.now()
            store = "ok"
        except StoreError as exc:
            clock, store = None, f"error: {exc}"
        loops = loops or {}
        # a loop that is down, or crash-looping (pipeline.supervisor), degrades the platform
        dead = [name for name, info in loops.items()
                if info.get("alive") is False or info.get("crash_looping") is True]
        ok = store == "ok" and not dead
        return Health(status="ok" if ok else "degraded", store=store, clock=clock, loops=loops)


def _names(value: Names) -> list[str]:
    """A name, a comma-separated string, or a list of names → a clean list."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise QueryError(f"want names, got {item!r}")
        # spaces after commas are fine; any other white space (a newline) is in the name
        out.extend(part.strip(" ") for part in item.split(",") if part.strip(" "))
    return out
