"""Latest values over a trailing window: a gauge's last value, a counter's recent rate.

A counter's latest rate is its increase from the first to the last sample of the window divided by
the time between them (duplicate-insensitive: only the window's two end points matter); a decrease
over the window is a reset (rate from zero) or, for Counter32 sources, a wrap. The same read gives
every port's utilisation for the fabric status and every metric of one switch for the drill-down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.metrics import CATALOG, METRIC_ID, Kind
from pipeline.store import Store, literal
from ui.params import NS
from ui.series import increase


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
    return (
        f"SELECT device, port, metric, qual, min(t) AS t0, max(t) AS t1, argMin(v, t) AS v0, "
        f"argMax(v, t) AS v1, argMax(f, t) AS f1 FROM (SELECT device, port, metric, qual, "
        f"{d.time_ns('ts')} AS t, value AS v, flags AS f FROM {store.database}.samples "
        f"WHERE {' AND '.join(conds)}) GROUP BY device, port, metric, qual "
        f"ORDER BY device, port, metric, qual"
    )


def latest(store: Store, end_ns: int, window_ns: int, metrics: Sequence[str],
           device: str | None = None, port: str | None = None) -> list[LatestRow]:
    cols = store.query(latest_sql(store, end_ns, window_ns, metrics, device, port))
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
