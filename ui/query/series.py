"""Series of one port: counters as per-second rates, gauges as values, bucketed to a step.

The SQL is duplicate-insensitive and dialect-neutral (only :class:`pipeline.store.dialect.Dialect`
time
expressions differ between chDB and ClickHouse 18.16):

1. an inner query keeps one row per (qual, event time): ``max(value)``, ``max(flags)``, so a
   batch delivered twice before the ReplacingMergeTree merged it counts once;
2. the outer query groups those rows into buckets of ``step`` aligned to the epoch. Gauges take
   ``avg``/``max``/``min``/``argMax``. Counters return, per bucket, the first and last point and the
   increase inside the bucket, summed over consecutive points of the time-sorted array with
   :data:`INCREASE_SQL` (a decrease is a reset, or a wrap for Counter32 sources);
3. :func:`bucket_rates` (numpy) adds the increase across each bucket boundary with the same rule
   and divides by the time between the buckets' last points.

So a rate never goes negative across a reboot or a 32-bit wrap, and a bucket's rate is exact for
the samples it has. One bucket before ``start`` is read so the first requested bucket has a
rate. Ranges include both ends: ``end`` defaults to the newest sample, which must be answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.metrics import COUNTER32_MODULUS, Metric
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.store.base import Columns, Store, literal
from ui.query.params import NS, TimeRange, is_counter
from ui.query.views import Series, SeriesResult

GAUGE_AGGS: dict[str, str] = {"mean": "avg(v)", "max": "max(v)", "min": "min(v)",
                              "last": "argMax(v, t)"}

#: the increase between consecutive points ``(p, c)`` with current flags ``f``:
#: reset flag → c; growth → c - p; Counter32 decrease → wrap; other decrease → reset → c
INCREASE_SQL = (
    f"if(bitAnd(f, {FLAG_RESET}) != 0, v, if(d >= 0, d, "
    f"if(bitAnd(f, {FLAG_COUNTER32}) != 0, d + {COUNTER32_MODULUS}, v)))"
)


@dataclass(frozen=True)
class SeriesRequest:
    """Metrics of one kind (all counters, or all gauges with one ``agg``) of one port."""

    device: str
    port: str
    metrics: tuple[Metric, ...]
    qual: int | None
    range: TimeRange
    step_ns: int
    agg: str

    @property
    def counters(self) -> bool:
        return is_counter(self.metrics[0])


Triple = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]


def _dedup_sql(store: Store, req: SeriesRequest, lo_ns: int) -> str:
    d = store.dialect
    ts = d.time_cmp("ts")
    where = [
        f"device = {literal(req.device)}",
        f"port = {literal(req.port)}",
        f"metric IN ({', '.join(literal(m.name) for m in req.metrics)})",
        f"{ts} >= {d.ns_to_time(lo_ns)}",
        f"{ts} <= {d.ns_to_time(req.range.end_ns)}",
    ]
    if req.qual is not None:
        where.append(f"qual = {literal(req.qual)}")
    return (f"SELECT metric, qual, {d.time_ns('ts')} AS t, max(value) AS v, max(flags) AS f "
            f"FROM {store.database}.samples WHERE {' AND '.join(where)} GROUP BY metric, qual, t")


def series_sql(store: Store, req: SeriesRequest) -> str:
    """The one SELECT answering a series request."""
    step = int(req.step_ns)
    first_bucket = req.range.start_ns // step
    if req.counters:
        inner = _dedup_sql(store, req, (first_bucket - 1) * step)
        # arrays sorted by time; arrayDifference's leading 0 is dropped with arrayPopFront
        increase = (
            f"arraySum(arrayMap((d, v, f) -> {INCREASE_SQL}, "
            "arrayPopFront(arrayDifference(arrayMap(x -> x.2, p))), "
            "arrayPopFront(arrayMap(x -> x.2, p)), arrayPopFront(arrayMap(x -> x.3, p))))"
        )
        return (
            f"SELECT metric, qual, b, t0, t1, v0, v1, f0, n, {increase} AS inc FROM ("
            f"SELECT metric, qual, intDiv(t, {step}) AS b, min(t) AS t0, max(t) AS t1, "
            f"argMin(v, t) AS v0, argMax(v, t) AS v1, argMin(f, t) AS f0, count() AS n, "
            f"arraySort(groupArray((t, v, f))) AS p FROM ({inner}) GROUP BY metric, qual, b"
            f") ORDER BY metric, qual, b"
        )
    inner = _dedup_sql(store, req, first_bucket * step)
    return (f"SELECT metric, qual, intDiv(t, {step}) AS b, {GAUGE_AGGS[req.agg]} AS val, "
            f"count() AS n FROM ({inner}) GROUP BY metric, qual, b ORDER BY metric, qual, b")


def series_keys(cols: Columns) -> NDArray[np.int64]:
    """One integer per (metric, qual) of rows sorted by them: equal keys, same series."""
    metric = cols["metric"]
    if len(metric) == 0:
        return np.empty(0, dtype=np.int64)
    _, codes = np.unique(metric.astype(str), return_inverse=True)
    return codes.astype(np.int64) * 1000 + cols["qual"].astype(np.int64) + 1


def split(cols: Columns, qual: NDArray[np.int64], b: NDArray[np.int64],
          values: NDArray[np.float64], rows: NDArray[np.intp] | None = None) -> dict[str, Triple]:
    """Per metric name, its (qual, bucket, value); ``rows`` picks the metric column's rows."""
    names = cols["metric"] if rows is None else cols["metric"][rows]
    out: dict[str, Triple] = {}
    for name in np.unique(names.astype(str)) if len(names) else []:
        mask = names.astype(str) == name
        out[str(name)] = (qual[mask], b[mask], values[mask])
    return out


def increase(prev: NDArray[np.float64], cur: NDArray[np.float64],
             flags: NDArray[Any]) -> NDArray[np.float64]:
    """The counter increase from ``prev`` to ``cur`` (the rule of :data:`INCREASE_SQL`)."""
    flags = flags.astype(np.int64)
    d = cur - prev
    wrapped = np.where((flags & FLAG_COUNTER32) != 0, d + COUNTER32_MODULUS, cur)
    out = np.where(d >= 0, d, wrapped)
    return np.where((flags & FLAG_RESET) != 0, cur, out).astype(np.float64)


def bucket_rates(cols: Columns) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                          NDArray[np.float64]]:
    """Per-bucket rates (per second) from the counter query's rows: (qual, bucket, rate)."""
    key = series_keys(cols)
    qual = cols["qual"].astype(np.int64)
    b = cols["b"].astype(np.int64)
    t0 = cols["t0"].astype(np.int64)
    t1 = cols["t1"].astype(np.int64)
    v0 = cols["v0"].astype(np.float64)
    v1 = cols["v1"].astype(np.float64)
    inc = cols["inc"].astype(np.float64)
    n = len(qual)
    rate = np.full(n, np.nan)
    if n == 0:
        return qual, b, rate
    same = np.zeros(n, dtype=bool)
    same[1:] = key[1:] == key[:-1]
    # buckets with a predecessor: boundary increase + inner increase over last-to-last time
    idx = np.nonzero(same)[0]
    if len(idx):
        boundary = increase(v1[idx - 1], v0[idx], cols["f0"][idx])
        dt = (t1[idx] - t1[idx - 1]).astype(np.float64)
        rate[idx] = (boundary + inc[idx]) / dt * NS
    # the first bucket of each qual: only what happened inside it
    first = np.nonzero(~same)[0]
    span = (t1[first] - t0[first]).astype(np.float64)
    ok = span > 0
    rate[first[ok]] = inc[first[ok]] / span[ok] * NS
    return qual, b, rate


def raw_values(store: Store, req: SeriesRequest) -> dict[str, Triple]:
    """Per metric, (qual, bucket, value) from the raw samples: rates for counters, ``agg`` for
    gauges."""
    cols = store.query(series_sql(store, req))
    if req.counters:
        return split(cols, *bucket_rates(cols))
    return split(cols, cols["qual"].astype(np.int64), cols["b"].astype(np.int64),
                 cols["val"].astype(np.float64))


def build_result(req: SeriesRequest, metric: Metric, found: Triple | None,
                 source: str) -> SeriesResult:
    """One metric's answer: every bucket of the range appears, empty ones as None."""
    empty = np.empty(0, dtype=np.int64)
    qual, b, values = found if found is not None else (empty, empty, np.empty(0))
    step = req.step_ns
    unit = f"{metric.unit}/s" if is_counter(metric) else metric.unit
    first_bucket = req.range.start_ns // step
    last_bucket = req.range.end_ns // step
    buckets = np.arange(first_bucket, last_bucket + 1, dtype=np.int64)
    series: list[Series] = []
    for q in np.unique(qual):
        mask = (qual == q) & (b >= first_bucket) & (b <= last_bucket)
        filled = np.full(len(buckets), np.nan)
        filled[b[mask] - first_bucket] = values[mask]
        points = [(int(t) * step, None if np.isnan(v) else float(v))
                  for t, v in zip(buckets, filled, strict=True)]
        series.append(Series(qual=None if q < 0 else int(q), points=points))
    return SeriesResult(
        device=req.device, port=req.port, metric=metric.name,
        kind="counter" if is_counter(metric) else "gauge", unit=unit,
        qualifier=metric.qualifier, agg=req.agg, start_ns=req.range.start_ns,
        end_ns=req.range.end_ns, step_ns=step, source=source, series=series,
    )
