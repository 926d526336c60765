"""Series of one port read from the 1-minute or 1-hour rollups, for long ranges.

The rollups (:data:`pipeline.store.schema.ROLLUPS`) hold per series and bucket the first/last value
by event time, min, max, first/last event time, distinct samples, the OR of the flags, and the
rate rule's sums (:mod:`pipeline.rates`): the increase of the rated intervals ending in the bucket
and their total length. They are read through :func:`pipeline.store.rollup.read.rollup_rows` (the
rolled buckets, and the buckets the rollup job has not rolled yet computed from what is below
them), so an answer covers every sample. Reading them:

* counters: a step bucket's rate is the sum of its rollup buckets' rated increases over the sum
  of their lengths (:func:`pipeline.rates.rule.per_second`): exactly what the raw samples give
  for the same step, resets and gaps inside a bucket included;
* gauges: ``max``/``min``/``last`` are exact; ``mean`` is the mean of the rollup buckets' last
  values (the rollups hold no sums).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import QueryError
from pipeline.rates.rule import per_second
from pipeline.store.base import Columns, Store
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import Rollup
from ui.query.params import NS, Limits, human
from ui.query.series import SeriesRequest, Triple, series_keys, series_where, split


def rollup_sql(store: Store, rollup: Rollup, req: SeriesRequest) -> str:
    step = req.step_ns
    lo = (req.range.start_ns // step) * step
    rows = rollup_rows(store, rollup, series_where(req), lo, req.range.end_ns)
    return (f"SELECT metric, qual, rb, v1, vmin, vmax, ri, rn FROM {rows} "
            f"ORDER BY metric, qual, rb")


def _groups(key: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.intp]:
    """Start index of each run of equal (series, step bucket) in rows sorted by both."""
    change = np.ones(len(key), dtype=bool)
    change[1:] = (key[1:] != key[:-1]) | (b[1:] != b[:-1])
    return np.nonzero(change)[0]


def rollup_values(cols: Columns, req: SeriesRequest) -> dict[str, Triple]:
    """Per metric, (qual, step bucket, value) from the rollup rows, rates for counters."""
    qual = cols["qual"].astype(np.int64)
    n = len(qual)
    if n == 0:
        return {}
    key = series_keys(cols)
    b = cols["rb"].astype(np.int64) // req.step_ns
    starts = _groups(key, b)
    if not req.counters:
        pick = {"max": "vmax", "min": "vmin"}.get(req.agg, "v1")
        v = cols[pick].astype(np.float64)
        if req.agg == "max":
            values = np.maximum.reduceat(v, starts)
        elif req.agg == "min":
            values = np.minimum.reduceat(v, starts)
        elif req.agg == "last":
            values = v[np.append(starts[1:], n) - 1]
        else:
            values = np.add.reduceat(v, starts) / np.diff(np.append(starts, n))
        return split(cols, qual[starts], b[starts], values, starts)
    rated_inc = np.add.reduceat(cols["ri"].astype(np.float64), starts)
    rated_ns = np.add.reduceat(cols["rn"].astype(np.int64), starts)
    return split(cols, qual[starts], b[starts], per_second(rated_inc, rated_ns), starts)


SOURCES = ("auto", "raw", "1m", "1h")


def pick_rollup(source: str, span_ns: int, step_ns: int, start_ns: int, now_ns: int,
                limits: Limits, available: Sequence[Rollup]) -> Rollup | None:
    """The rollup a request reads, or None for the raw samples.

    ``auto`` reads raw samples for recent ranges up to ``raw_auto_span_ns``, and otherwise the
    coarsest rollup whose width divides the step (same rates, fewer rows)."""
    by_width = {"1m": 60 * NS, "1h": 3600 * NS}
    if source == "raw":
        if span_ns > limits.max_raw_range_ns:
            raise QueryError(f"source=raw reads at most {human(limits.max_raw_range_ns)} of "
                             f"samples; use source=auto or a shorter range")
        return None
    if source in by_width:
        found = [r for r in available if r.bucket_ns == by_width[source]]
        if not found:
            raise QueryError(f"source={source}: this store has no {source} rollup")
        if step_ns % found[0].bucket_ns:
            raise QueryError(f"source={source} needs a step that is a multiple of {source}")
        return found[0]
    recent = start_ns >= now_ns - limits.raw_retention_ns
    if recent and span_ns <= limits.raw_auto_span_ns:
        return None
    fitting = [r for r in available if step_ns % r.bucket_ns == 0]
    if fitting:
        return max(fitting, key=lambda r: r.bucket_ns)
    if span_ns > limits.max_raw_range_ns:
        raise QueryError(f"a range over {human(limits.max_raw_range_ns)} is read from the "
                         f"rollups: use a step that is a multiple of 1m")
    return None
