"""Series of one port: counters as per-second rates, gauges as values, bucketed to a step.

The SQL is duplicate-insensitive and dialect-neutral (only :class:`pipeline.store.dialect.Dialect`
time expressions differ between chDB and ClickHouse 18.16); both kinds read the samples through
:func:`pipeline.rates.sql.deduped_sql` (one row per series and event time, so a batch delivered
twice before the ReplacingMergeTree merged it counts once), in buckets of ``step`` aligned to the
epoch:

* counters: every sample's interval is judged by the rule of :mod:`pipeline.rates` in SQL
  (:func:`pipeline.rates.sql.samples_judged_sql`, which reads the rule's horizon before the range
  so the first bucket is judged as detection judged it); a bucket's rate is the increase of the
  rated intervals ending in it over their duration (:func:`pipeline.rates.rule.per_second`).
  With ``step`` equal to the sample interval that is each interval's own rate, as the detectors
  see it; a bucket holding only a first sample, a reset or a gap has no rate;
* gauges take ``avg``/``max``/``min``/``argMax``.

Ranges include both ends: ``end`` defaults to the newest sample, which must be answered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.metrics import Metric
from pipeline.rates.rule import per_second
from pipeline.rates.sql import deduped_sql, samples_judged_sql
from pipeline.store.base import Columns, Store, literal
from ui.query.params import TimeRange, is_counter
from ui.query.views import Series, SeriesResult

GAUGE_AGGS: dict[str, str] = {"mean": "avg(v)", "max": "max(v)", "min": "min(v)",
                              "last": "argMax(v, t)"}


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


def series_where(req: SeriesRequest) -> list[str]:
    """The conditions selecting a request's series (by their key columns)."""
    where = [
        f"device = {literal(req.device)}",
        f"port = {literal(req.port)}",
        f"metric IN ({', '.join(literal(m.name) for m in req.metrics)})",
    ]
    if req.qual is not None:
        where.append(f"qual = {literal(req.qual)}")
    return where


def series_sql(store: Store, req: SeriesRequest) -> str:
    """The one SELECT answering a series request."""
    step = int(req.step_ns)
    lo, hi = req.range.start_ns // step * step, req.range.end_ns + 1
    keys = ("metric", "qual")
    if req.counters:
        judged = samples_judged_sql(store.dialect, store.database, keys, series_where(req), lo, hi)
        return (f"SELECT metric, qual, intDiv(t, {step}) AS b, sum(rated_inc) AS inc, "
                f"sum(rated_ns) AS span FROM ({judged}) GROUP BY metric, qual, b "
                f"ORDER BY metric, qual, b")
    inner = deduped_sql(store.dialect, store.database, keys, series_where(req), lo, hi)
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


def raw_values(store: Store, req: SeriesRequest) -> dict[str, Triple]:
    """Per metric, (qual, bucket, value) from the raw samples: rates for counters, ``agg`` for
    gauges."""
    cols = store.query(series_sql(store, req))
    if req.counters:
        return split(cols, cols["qual"].astype(np.int64), cols["b"].astype(np.int64),
                     per_second(cols["inc"], cols["span"]))
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
