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

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.errors import QueryError, StoreError
from pipeline.metrics import Metric
from pipeline.store.base import Store, literal
from pipeline.store.schema import ROLLUPS, Rollup
from pipeline.topology.model import Topology
from ui.query import params as p
from ui.query.actions import ActionFilter, actions_sql, rows_to_actions
from ui.query.alerts import AlertFilter, episodes_sql, group_incidents, rows_to_alerts, state_sql
from ui.query.clock import FabricClock
from ui.query.fabric_state import FabricState, StatusOptions
from ui.query.latest import latest
from ui.query.rollup_series import SOURCES, pick_rollup, rollup_sql, rollup_values
from ui.query.series import GAUGE_AGGS, SeriesRequest, Triple, build_result, raw_values
from ui.query.status import utilisation
from ui.query.views import (
    ActionList,
    AlertList,
    AlertView,
    Clock,
    FabricStatus,
    FabricView,
    Health,
    HeatMap,
    IncidentList,
    LatestList,
    LatestValue,
    SeriesSet,
    TopologyView,
    Utilisation,
)

NS = p.NS
Names = str | Sequence[str] | None

__all__ = ["Query", "StatusOptions"]


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
        self._rollups: list[Rollup] | None = None
        #: the present: status, the fabric in its hierarchy, the heat map
        self.fabric_state = FabricState(store, self._topology, self.clock, self.rollups,
                                        self.limits, self.options)

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

    def devices_seen(self) -> list[tuple[str, int]]:
        """``(device, newest sample ns)`` of the devices reporting."""
        return self.fabric_state.devices_seen()

    def status(self, top: int = 20) -> FabricStatus:
        """Every link, host and switch that is not ok, level counts, the busiest links.

        Answers are reused for ``status_cache_s`` (every open dashboard asks every few seconds)."""
        return self.fabric_state.status(top, self._utilisation)

    def fabric(self, group: str | None = None, switch: str | None = None,
               incident: str | None = None) -> FabricView:
        """The fabric's groups (zones, the aggregation tier) worst first; a group's switches,
        a switch's ports; an incident's pause tree (:mod:`ui.query.fabric_state`)."""
        return self.fabric_state.fabric(group, switch, incident)

    def heatmap(self, scope: str | None = None, sort: str | None = None,
                search: str | None = None, top: int = 50) -> HeatMap:
        """The ports that matter, ranked by ``sort`` (:mod:`ui.query.heatmap`)."""
        return self.fabric_state.heatmap(scope or "", sort or "pfc_rx", search or "", top)

    def _utilisation(self, top: int) -> list[Utilisation]:
        """The busiest ports without a topology: every port's recent octet rates."""
        minute = next((r for r in self.rollups() if r.bucket_s == 60), None)
        now_ns = self.clock.now().now_ns
        rows = latest(self.store, now_ns, self.options.utilisation_window_ns,
                      ["if_in_octets", "if_out_octets"], rollup=minute)
        return utilisation(rows, None, top)

    def topology_view(self) -> TopologyView:
        return self.fabric_state.topology_view()

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
