"""Latest values over a trailing window: a gauge's last value, a counter's recent rate.

A counter's latest rate is the rate rule's (:mod:`pipeline.rates`) over the window: the increase
of the rated intervals ending in it over their total length, so a reset or a gap in the window is
left out rather than averaged in, and a window of one sample interval gives that interval's rate
as detection saw it. The same read gives every port's utilisation for the fabric status (from the
1-minute rollup's rated sums when the store has it: then the window starts at the beginning of a
minute bucket) and every metric of one switch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.metrics import CATALOG, METRIC_ID, Kind
from pipeline.rates.rule import per_second
from pipeline.rates.sql import counter_sql, samples_judged_sql
from pipeline.store.base import Store, literal
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import SERIES_KEY, Rollup


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
    conds = []
    if metrics:
        conds.append(f"metric IN ({', '.join(literal(m) for m in metrics)})")
    if device is not None:
        conds.append(f"device = {literal(device)}")
    if port is not None:
        conds.append(f"port = {literal(port)}")
    judged = samples_judged_sql(store.dialect, store.database, SERIES_KEY, conds,
                                end_ns - window_ns, end_ns + 1, counter_sql())
    return (
        f"SELECT device, port, metric, qual, max(t) AS newest, argMax(value, t) AS last, "
        f"sum(rated_inc) AS inc, sum(rated_ns) AS span FROM ({judged}) "
        f"GROUP BY device, port, metric, qual ORDER BY device, port, metric, qual"
    )


def rollup_latest_sql(store: Store, rollup: Rollup, end_ns: int, window_ns: int,
                      metrics: Sequence[str]) -> str:
    """:func:`latest_sql` for the whole fabric from a rollup: one row per series and bucket
    instead of one per sample. The recent rows of every series sit in a different part of the
    sort order, so a fabric-wide read touches most of the table; the rollup's table is far
    smaller."""
    rows = rollup_rows(store, rollup, [f"metric IN ({', '.join(literal(m) for m in metrics)})"],
                       end_ns - window_ns - rollup.bucket_ns, end_ns)
    return (
        f"SELECT device, port, metric, qual, max(t1) AS newest, argMax(v1, t1) AS last, "
        f"sum(ri) AS inc, sum(rn) AS span FROM {rows} "
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
    newest = cols["newest"].astype(np.int64)
    values = np.where(kinds, per_second(cols["inc"], cols["span"]),
                      cols["last"].astype(np.float64))
    return [
        LatestRow(str(cols["device"][i]), str(cols["port"][i]), str(cols["metric"][i]),
                  int(cols["qual"][i]), None if np.isnan(values[i]) else float(values[i]),
                  int(newest[i]))
        for i in range(n)
    ]
