"""Every port's recent traffic, pauses, ECN marks and errors in arrays: what the fabric view, the
heat map and the busiest links read, measured once for the whole fabric.

Where it comes from: the newest minute the 1-minute rollup has rolled (its watermark's bucket),
read once per watermark (a fabric-wide read of raw samples by time touches most of the samples
table, a rolled minute is one row per series: see docs/benchmarks.md). Each series' rate is the
rate rule's over that minute (:func:`pipeline.rates.sql.per_second_sql` of its rated increase and
length), summed over a port's priorities and queues (the pause time: the most paused priority).
The engine aggregates per port and names each row by numbers (device and port codes), so the
answer is a few numeric columns of at most one row per port. A store without the rollup, or
before it has rolled a minute, is read from the samples' latest rates instead
(:func:`ui.query.latest.latest`; fine for small fabrics).

Which switches are reporting is a separate, fresher read (:func:`live_devices`): the newest sample
of each device over the last ``window`` of event time; which were heard from in the last hour is
another (:func:`seen_devices`), from the rollup's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.rates.sql import per_second_sql
from pipeline.store.base import Store, literal
from pipeline.store.schema import SAMPLES, Rollup
from ui.query.fabric_index import FabricIndex
from ui.query.latest import latest

#: per-port measures: name → (metrics, how a port's series combine)
MEASURES: dict[str, tuple[tuple[str, ...], str]] = {
    "in_bps": (("if_in_octets",), "sum"),
    "out_bps": (("if_out_octets",), "sum"),
    "pfc_rx": (("pfc_rx_frames",), "sum"),
    "pfc_tx": (("pfc_tx_frames",), "sum"),
    "paused_us": (("pfc_rx_pause_us",), "max"),
    "ecn": (("queue_ecn_marked_pkts",), "sum"),
    "errors": (("if_in_fcs_errors", "if_in_symbol_errors"), "sum"),
}
METRICS: tuple[str, ...] = tuple(m for ms, _ in MEASURES.values() for m in ms)


@dataclass(frozen=True)
class PortSnapshot:
    """Per port of a :class:`FabricIndex` (same positions): each measure's per-second value
    (octets as bytes/s), NaN where the port reported none; when it was measured."""

    values: dict[str, NDArray[np.float64]]
    #: the end of the span the values cover (event time, ns); None: nothing measured
    as_of_ns: int | None
    source: str
    #: per switch of the index: the newest sample time in the span (0: none)
    switch_last_ns: NDArray[np.int64]

    def util(self, index: FabricIndex) -> NDArray[np.float64]:
        """max(in, out) / the port's speed, 0..1 (NaN: no traffic reported or no speed)."""
        bits = np.fmax(self.values["in_bps"], self.values["out_bps"]) * 8.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(index.port_gbps > 0, bits / (index.port_gbps * 1e9), np.nan)

    @classmethod
    def empty(cls, index: FabricIndex, source: str = "none") -> PortSnapshot:
        n = len(index.port_names)
        return cls({k: np.full(n, np.nan) for k in MEASURES}, None, source,
                   np.zeros(len(index.switches), np.int64))


def rollup_snapshot_sql(store: Store, rollup: Rollup, bucket_ns: int, index: FabricIndex) -> str:
    """Per port, each measure over one rolled bucket, rows named by device and port codes."""
    d = store.dialect
    devices = list(index.switches)
    names = sorted(set(index.port_names))
    measures = []
    for key, (metrics, how) in MEASURES.items():
        is_it = f"metric IN ({', '.join(literal(m) for m in metrics)}) AND isFinite(r)"
        # NaN when none of the port's series of the measure has a rate in the minute
        measures.append(f"if(countIf({is_it}) > 0, {how}If(r, {is_it}), nan) AS {key}")
    rows = (f"SELECT device, port, metric, t_last, {per_second_sql('rated_inc', 'rated_ns')} AS r "
            f"FROM {store.database}.{rollup.name} FINAL WHERE "
            + " AND ".join([*d.time_range("bucket", bucket_ns, bucket_ns + rollup.bucket_ns),
                            f"metric IN ({', '.join(literal(m) for m in METRICS)})"]))
    return (f"SELECT {_code('device', devices)} AS dev, {_code('port', names)} AS prt, "
            f"max(t_last) AS last, {', '.join(measures)} FROM ({rows}) GROUP BY device, port")


def _code(column: str, names: Sequence[str]) -> str:
    """The position of ``column``'s value in ``names`` (-1 when absent), computed by the engine."""
    return (f"transform(toString({column}), {literal(list(names))}, "
            f"CAST({literal(list(range(len(names))))} AS Array(Int32)), toInt32(-1))")


def read_rollup(store: Store, rollup: Rollup, bucket_ns: int, index: FabricIndex) -> PortSnapshot:
    cols = store.query(rollup_snapshot_sql(store, rollup, bucket_ns, index))
    names = sorted(set(index.port_names))
    code = {n: i for i, n in enumerate(names)}
    table = np.full((len(index.switches), len(names)), -1, np.int64)
    table[index.port_switch, [code[n] for n in index.port_names]] = np.arange(
        len(index.port_names))
    dev = np.asarray(cols.get("dev", ()), np.int64)
    prt = np.asarray(cols.get("prt", ()), np.int64)
    known = (dev >= 0) & (prt >= 0)
    at = np.full(len(dev), -1, np.int64)
    at[known] = table[dev[known], prt[known]]
    hit = at >= 0
    snap = PortSnapshot.empty(index, f"{rollup.name} (the minute rolled last)")
    for key in MEASURES:
        snap.values[key][at[hit]] = np.asarray(cols[key], np.float64)[hit]
    last = snap.switch_last_ns
    if hit.any():
        np.maximum.at(last, index.port_switch[at[hit]], np.asarray(cols["last"], np.int64)[hit])
    return PortSnapshot(snap.values, bucket_ns + rollup.bucket_ns, snap.source, last)


def read_samples(store: Store, end_ns: int, window_ns: int, index: FabricIndex) -> PortSnapshot:
    """The same measures from the samples' latest rates over ``window_ns`` (no rollup)."""
    snap = PortSnapshot.empty(index, "samples (latest rates)")
    rows = latest(store, end_ns, window_ns, METRICS)
    which = {m: (key, how) for key, (ms, how) in MEASURES.items() for m in ms}
    newest = 0
    for row in rows:
        i = index.port_idx.get((row.device, row.port))
        if i is None or row.value is None or not np.isfinite(row.value):
            continue
        key, how = which[row.metric]
        cur = snap.values[key][i]
        snap.values[key][i] = row.value if np.isnan(cur) else (
            cur + row.value if how == "sum" else max(cur, row.value))
        s = index.port_switch[i]
        snap.switch_last_ns[s] = max(int(snap.switch_last_ns[s]), row.at_ns)
        newest = max(newest, row.at_ns)
    return PortSnapshot(snap.values, newest or None, snap.source, snap.switch_last_ns)


def live_devices(store: Store, now_ns: int, window_ns: int) -> dict[str, int]:
    """Device → its newest sample's event time, for devices heard from in the last
    ``window_ns`` (a short window: the engine reads only the parts holding recent samples)."""
    d = store.dialect
    conds = " AND ".join(d.time_range("ts", now_ns - window_ns, None))
    cols = store.query(f"SELECT device, max({d.time_ns('ts')}) AS last FROM "
                       f"{store.database}.{SAMPLES.name} WHERE {conds} GROUP BY device")
    return {str(dev): int(last) for dev, last in zip(cols.get("device", ()), cols.get("last", ()),
                                                     strict=True)}


def seen_devices(store: Store, rollup: Rollup | None, since_ns: int) -> dict[str, int]:
    """Device → its newest sample's event time, for devices heard from since ``since_ns``
    (an hour, say), from the rollup's rolled rows when there is one (a device heard from only in
    the minute or two not rolled yet is in :func:`live_devices`)."""
    d = store.dialect
    if rollup is not None:
        conds = " AND ".join(d.time_range("bucket", since_ns - rollup.bucket_ns, None))
        sql = (f"SELECT device, max(t_last) AS last FROM {store.database}.{rollup.name} "
               f"WHERE {conds} GROUP BY device")
    else:
        conds = " AND ".join(d.time_range("ts", since_ns, None))
        sql = (f"SELECT device, max({d.time_ns('ts')}) AS last FROM "
               f"{store.database}.{SAMPLES.name} WHERE {conds} GROUP BY device")
    cols = store.query(sql)
    return {str(dev): int(last) for dev, last in zip(cols.get("device", ()), cols.get("last", ()),
                                                     strict=True)}
