"""Series of one port read from the 1-minute or 1-hour rollups, for long ranges.

The rollups (:data:`pipeline.store.schema.ROLLUPS`) hold per series and bucket the first/last value
by
event time, min, max, first/last event time, distinct samples and the OR of the flags; they are
read through :func:`pipeline.store.rollup.read.rollup_rows` (the rolled buckets, and the buckets the
rollup job has not rolled yet computed from what is below them), so an answer covers every
sample. Reading them:

* counters: each rollup bucket's increase is its inner increase (last - first; a decrease is a
  reset, or a wrap for Counter32) plus the increase across the boundary from the previous rollup
  bucket's last value (the rule of :func:`ui.query.series.increase`). A step bucket's rate is the
  sum
  of its rollup buckets' increases over the time from the previous bucket's last sample to its own
  last sample: with ``step`` equal to the rollup's width this is exactly the raw samples' rate,
  as long as no counter reset falls inside a rollup bucket (then the counts between the reset and
  the sample before it are lost, as they are on the device);
* gauges: ``max``/``min``/``last`` are exact; ``mean`` is the mean of the rollup buckets' last
  values (the rollups hold no sums).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import QueryError
from pipeline.model import FLAG_COUNTER32
from pipeline.store.base import Columns, Store, literal
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import Rollup
from ui.query.params import NS, Limits, human
from ui.query.series import SeriesRequest, Triple, increase, series_keys, split


def rollup_sql(store: Store, rollup: Rollup, req: SeriesRequest) -> str:
    step = req.step_ns
    lo = (req.range.start_ns // step) * step - rollup.bucket_ns
    where = [
        f"device = {literal(req.device)}",
        f"port = {literal(req.port)}",
        f"metric IN ({', '.join(literal(m.name) for m in req.metrics)})",
    ]
    if req.qual is not None:
        where.append(f"qual = {literal(req.qual)}")
    rows = rollup_rows(store, rollup, where, lo, req.range.end_ns)
    return (f"SELECT metric, qual, rb, v0, v1, vmin, vmax, t0, t1, fl FROM {rows} "
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
    v0 = cols["v0"].astype(np.float64)
    v1 = cols["v1"].astype(np.float64)
    t0 = cols["t0"].astype(np.int64)
    t1 = cols["t1"].astype(np.int64)
    flags = cols["fl"].astype(np.int64)
    inc = increase(v0, v1, flags & FLAG_COUNTER32)
    dt = (t1 - t0).astype(np.float64)
    same = np.zeros(n, dtype=bool)
    same[1:] = key[1:] == key[:-1]
    idx = np.nonzero(same)[0]
    inc[idx] += increase(v1[idx - 1], v0[idx], flags[idx] & FLAG_COUNTER32)
    dt[idx] = (t1[idx] - t1[idx - 1]).astype(np.float64)
    total_inc = np.add.reduceat(inc, starts)
    total_dt = np.add.reduceat(dt, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(total_dt > 0, total_inc / total_dt * NS, np.nan)
    return split(cols, qual[starts], b[starts], rates, starts)


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
