"""Latest values over a trailing window: a gauge's last value, a counter's recent rate.

A counter's latest rate is its increase from the first to the last sample of the window divided by
the time between them (duplicate-insensitive: only the window's two end points matter); a decrease
over the window is a reset (rate from zero) or, for Counter32 sources, a wrap. The same read gives
every port's utilisation for the fabric status (from the 1-minute rollup when the store has it:
then the window starts at the beginning of a minute bucket) and every metric of one switch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.metrics import CATALOG, METRIC_ID, Kind
from pipeline.store.base import Store, literal
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import Rollup
from ui.query.params import NS
from ui.query.series import increase


@dataclass(frozen=True)
class LatestRow:
    device: str
    port: str
    metric: str
    qual: int
    value: float | None
    at_ns: int


def latest_sql(store: Store, end_ns: int, window_ns: int, metrics: Sequence[str],
               device: str | None = None, port: str | None = None) -> str:
    d = store.dialect
    ts = d.time_cmp("ts")
    conds = [f"{ts} >= {d.ns_to_time(end_ns - window_ns)}", f"{ts} <= {d.ns_to_time(end_ns)}"]
    if metrics:
        conds.append(f"metric IN ({', '.join(literal(m) for m in metrics)})")
    if device is not None:
        conds.append(f"device = {literal(device)}")
    if port is not None:
        conds.append(f"port = {literal(port)}")
    t = d.stored("ts")  # the bare column: no per-row expression before the filter
    return (
        f"SELECT device, port, metric, qual, min({t}) AS t0, max({t}) AS t1, "
        f"argMin(value, {t}) AS v0, argMax(value, {t}) AS v1, argMax(flags, {t}) AS f1 "
        f"FROM {store.database}.samples WHERE {' AND '.join(conds)} "
        f"GROUP BY device, port, metric, qual ORDER BY device, port, metric, qual"
    )


def rollup_latest_sql(store: Store, rollup: Rollup, end_ns: int, window_ns: int,
                      metrics: Sequence[str]) -> str:
    """:func:`latest_sql` for the whole fabric from a rollup: one row per series and bucket
    instead of one per sample. The recent rows of every series sit in a different part of the
    sort order, so a fabric-wide read touches most of the table; the rollup's table is far
    smaller."""
    rows = rollup_rows(store, rollup, [f"metric IN ({', '.join(literal(m) for m in metrics)})"],
                       end_ns - window_ns - rollup.bucket_ns, end_ns, distinct=False)
    return (
        f"SELECT device, port, metric, qual, min(a0) AS t0, max(a1) AS t1, argMin(w0, a0) AS v0, "
        f"argMax(w1, a1) AS v1, max(fl) AS f1 FROM (SELECT device, port, metric, qual, "
        f"v0 AS w0, v1 AS w1, t0 AS a0, t1 AS a1, fl FROM {rows}) "
        f"GROUP BY device, port, metric, qual ORDER BY device, port, metric, qual"
    )


def latest(store: Store, end_ns: int, window_ns: int, metrics: Sequence[str],
           device: str | None = None, port: str | None = None,
           rollup: Rollup | None = None) -> list[LatestRow]:
    """Latest values and rates; fabric-wide reads may pass a rollup to read instead."""
    sql = (rollup_latest_sql(store, rollup, end_ns, window_ns, metrics)
           if rollup is not None and metrics and device is None and port is None
           else latest_sql(store, end_ns, window_ns, metrics, device, port))
    cols = store.query(sql)
    n = len(cols.get("device", ()))
    if n == 0:
        return []
    kinds = np.array([CATALOG[METRIC_ID[str(m)]].kind is Kind.COUNTER
                      if str(m) in METRIC_ID else False for m in cols["metric"]], dtype=bool)
    t0 = cols["t0"].astype(np.int64)
    t1 = cols["t1"].astype(np.int64)
    v0 = cols["v0"].astype(np.float64)
    v1 = cols["v1"].astype(np.float64)
    inc = increase(v0, v1, cols["f1"])
    span = (t1 - t0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(span > 0, inc / span * NS, np.nan)
    values = np.where(kinds, rate, v1)
    return [
        LatestRow(str(cols["device"][i]), str(cols["port"][i]), str(cols["metric"][i]),
                  int(cols["qual"][i]), None if np.isnan(values[i]) else float(values[i]),
                  int(t1[i]))
        for i in range(n)
    ]
