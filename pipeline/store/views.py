"""The store in plain SQL: a documented, stable set of views that Grafana's ClickHouse data source
or ``clickhouse-client`` can query without knowing the internal schema (``docs/sql.md``).

* ``port_rates``: per port, counter and minute, the rate (per second) by the rule of
  :mod:`pipeline.rates` (resets, wraps and gaps give no rate rather than a wrong one);
* ``pfc_rates``: per port, PFC priority and minute, pause frames received and sent per second
  and the share of the time the port was paused and pausing its peer;
* ``incidents``: every incident episode (a root cause the correlator found) with its latest
  state;
* ``drains``: the audit trail of the guarded runbooks (drain, undrain, isolate, restore).

Every view has the same columns on every engine (chDB, ClickHouse from 18.16, a cluster): times
as ``DateTime`` (UTC, for a time axis) beside their ``Int64`` nanoseconds. The rates are the
1-minute rollup's (:func:`pipeline.store.rollup.read.minute_rows`): the minutes the rollup job has
rolled, and the newer ones computed from the samples as the view is read, so a view answers up
to the newest sample. The views are part of the schema: ``migrate`` creates the missing ones
(``ON CLUSTER`` on a cluster, over the Distributed tables); their columns only ever grow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.kinds import RUNBOOK_ACTION_NAMES
from pipeline.metrics import CATALOG, Kind
from pipeline.rates.sql import per_second_sql
from pipeline.store.base import literal
from pipeline.store.dialect import Dialect
from pipeline.store.rollup.read import minute_rows
from pipeline.store.schema import ACTIONS, ALERTS

NS = 1_000_000_000

#: counters of a port as a whole (no PFC priority, no queue)
PORT_COUNTERS: tuple[str, ...] = tuple(m.name for m in CATALOG
                                       if m.kind is Kind.COUNTER and m.qualifier is None)
#: the PFC counters per priority, as (received frames, sent frames, time paused, time pausing)
PFC_COUNTERS: tuple[str, str, str, str] = ("pfc_rx_frames", "pfc_tx_frames", "pfc_rx_pause_us",
                                           "pfc_tx_pause_us")


@dataclass(frozen=True)
class View:
    """One view: its name, what it holds, its columns (name, meaning) in order, and its SELECT
    for an engine (``rolled``: the store keeps rollups)."""

    name: str
    help: str
    columns: tuple[tuple[str, str], ...]
    select: Callable[[Dialect, str, bool], str]

    def column_names(self) -> list[str]:
        return [c for c, _ in self.columns]


def _time(ns: str) -> str:
    """A time axis column from Int64 ns."""
    return f"toDateTime(intDiv({ns}, {NS}), 'UTC')"


def _names(names: Sequence[str]) -> str:
    return ", ".join(literal(n) for n in names)


def _port_rates(d: Dialect, db: str, rolled: bool) -> str:
    units = {m.name: f"{m.unit}/s" for m in CATALOG if m.name in PORT_COUNTERS}
    unit = (f"transform(metric, [{_names(list(units))}], [{_names(list(units.values()))}], "
            f"'')")
    rows = minute_rows(d, db, [f"metric IN ({_names(PORT_COUNTERS)})"], rolled)
    return (f"SELECT {_time('rb')} AS minute, rb AS minute_ns, device, port, metric, {unit} "
            f"AS unit, {per_second_sql('ri', 'rn')} AS rate FROM {rows}")


def _pfc_rates(d: Dialect, db: str, rolled: bool) -> str:
    rx, tx, rx_us, tx_us = PFC_COUNTERS

    def rate(metric: str) -> str:
        m = literal(metric)
        return per_second_sql(f"sumIf(ri, metric = {m})", f"sumIf(rn, metric = {m})")

    rows = minute_rows(d, db, [f"metric IN ({_names(PFC_COUNTERS)})"], rolled)
    return (f"SELECT {_time('rb')} AS minute, rb AS minute_ns, device, port, qual AS priority, "
            f"{rate(rx)} AS rx_frames_per_s, {rate(tx)} AS tx_frames_per_s, "
            f"{rate(rx_us)} / 1000000 AS rx_paused, {rate(tx_us)} / 1000000 AS tx_pausing "
            f"FROM {rows} GROUP BY device, port, qual, rb")


def _incidents(d: Dialect, db: str, rolled: bool) -> str:
    # an episode is (fingerprint, starts); its state is its latest row, resolved winning a tie
    # (the later word), as the API reads alerts (ui/query/alerts.py)
    latest = (f"SELECT fingerprint, name, entity, severity, status, confidence, ports, explains, "
              f"source, {d.time_ns('starts')} AS s, {d.time_ns('ends')} AS e, "
              f"{d.time_ns('updated')} AS u FROM {db}.{ALERTS.name} WHERE root_cause = 1 "
              f"ORDER BY fingerprint, s, u DESC, status DESC LIMIT 1 BY fingerprint, s")
    return (f"SELECT {_time('s')} AS started, s AS started_ns, "
            f"if(status = 'resolved', {_time('e')}, NULL) AS ended, "
            f"if(status = 'resolved', e, 0) AS ended_ns, {_time('u')} AS updated, "
            f"u AS updated_ns, name AS kind, entity, severity, status, confidence, ports, "
            f"explains, length(explains) AS symptoms, fingerprint, source FROM ({latest})")


def _drains(d: Dialect, db: str, rolled: bool) -> str:
    # an action result has a unique id: a repeat is the same row
    records = (f"SELECT {d.time_ns('at')} AS a, id, action, target, mode, outcome, alert_name, "
               f"alert_fingerprint, detail FROM {db}.{ACTIONS.name} "
               f"WHERE action IN ({_names(RUNBOOK_ACTION_NAMES)}) ORDER BY a, id LIMIT 1 BY id")
    return (f"SELECT {_time('a')} AS at, a AS at_ns, action, target, mode, outcome, alert_name, "
            f"alert_fingerprint, detail, id FROM ({records})")


VIEWS: tuple[View, ...] = (
    View("port_rates", "per port, counter and minute: the rate per second", (
        ("minute", "the minute's start (DateTime, UTC)"),
        ("minute_ns", "the minute's start, ns since the epoch"),
        ("device", "the switch"), ("port", "the port"),
        ("metric", "the counter (docs/metrics.md names them)"),
        ("unit", "the rate's unit (bytes/s, packets/s, ...)"),
        ("rate", "the counter's increase per second over the intervals that end in the minute; "
                 "NaN where none has a rate (a reset, a gap)")), _port_rates),
    View("pfc_rates", "per port, PFC priority and minute: pause frames and paused time", (
        ("minute", "the minute's start (DateTime, UTC)"),
        ("minute_ns", "the minute's start, ns since the epoch"),
        ("device", "the switch"), ("port", "the port"), ("priority", "the PFC priority (0-7)"),
        ("rx_frames_per_s", "pause frames received per second"),
        ("tx_frames_per_s", "pause frames sent per second"),
        ("rx_paused", "share of the time the port was paused by its peer (0-1)"),
        ("tx_pausing", "share of the time the port was pausing its peer (0-1)")), _pfc_rates),
    View("incidents", "every incident episode (a root cause), its latest state", (
        ("started", "when it began (DateTime, UTC)"), ("started_ns", "the same, ns"),
        ("ended", "when it resolved (NULL while it lasts)"), ("ended_ns", "the same, ns; 0"),
        ("updated", "its latest change (DateTime, UTC)"), ("updated_ns", "the same, ns"),
        ("kind", "the root cause (pfc_storm, faulty_link, incast, ...)"),
        ("entity", "what it is about: a host, a link, a port, a switch"),
        ("severity", "critical, warning or info"), ("status", "firing or resolved"),
        ("confidence", "the correlator's confidence (0-1)"),
        ("ports", "the ports involved"), ("explains", "the symptoms it explains (fingerprints)"),
        ("symptoms", "how many"), ("fingerprint", "the alert's identity (Alertmanager's)"),
        ("source", "what raised it")), _incidents),
    View("drains", "the guarded runbooks' audit trail: drain, undrain, isolate, restore", (
        ("at", "when (DateTime, UTC)"), ("at_ns", "the same, ns"),
        ("action", "drain, undrain, isolate or restore"), ("target", "the link or host"),
        ("mode", "dry_run, approval or auto"),
        ("outcome", "done, refused, failed, pending or skipped"),
        ("alert_name", "the incident that asked for it"),
        ("alert_fingerprint", "that incident's fingerprint"),
        ("detail", "the step and what happened"), ("id", "the record's id")), _drains),
)


def view_ddl(dialect: Dialect, database: str, cluster: str = "",
             rolled: bool = True) -> list[str]:
    """``CREATE VIEW`` for every view (``ON CLUSTER`` on a cluster, where each server's view
    reads the Distributed tables); ``rolled``: the store keeps rollups."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    return [f"CREATE VIEW IF NOT EXISTS {database}.{v.name}{on_cluster} AS "
            f"{v.select(dialect, database, rolled)}" for v in VIEWS]
