"""Reading a rollup as if it held every sample: rolled rows up to its watermark, the rest live.

The rollup job rolls a bucket once it is complete by event time, so a rollup table lags the data
by a minute or so (an hour for the hourly one). :func:`rollup_rows` renders the relation a reader
selects from instead of the table: the rolled rows of buckets before the rollup's watermark, and
for the buckets after it the same aggregates computed on the fly from what is not rolled yet (the
finer rollup's rows, then the samples). The rows are under the read names
(:data:`pipeline.store.rollup.sql.READ_COLUMNS`), one per series and bucket, so an answer from a
rollup is
the answer a rollup written at every insert would give, and the rows do not move when the job
rolls a bucket.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping, Sequence

from pipeline.rates.rule import HORIZON_NS
from pipeline.store.base import Store
from pipeline.store.dialect import Dialect
from pipeline.store.rollup.sql import (
    ceil_to,
    dedup_select,
    floor_to,
    fold_select,
    samples_select,
    state_sql,
    watermark_sql,
)
from pipeline.store.schema import ROLLUP_1M, SERIES_KEY, Rollup

#: how long a reader reuses the watermarks it read (they only grow, and an older one gives the
#: same answer, with more of it computed from the samples)
WATERMARK_CACHE_S = 1.0
_cache: weakref.WeakKeyDictionary[Store, tuple[float, dict[str, int]]] = \
    weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def watermarks(store: Store) -> dict[str, int]:
    """Each rollup's watermark (every bucket before it is rolled), by table name; a rollup never
    rolled is absent."""
    cols = store.query(state_sql(store.database))
    return {str(name): int(done) for name, done in zip(cols.get("name", ()),
                                                       cols.get("done", ()), strict=True)}


def recent_watermarks(store: Store) -> dict[str, int]:
    """:func:`watermarks`, as read at most :data:`WATERMARK_CACHE_S` ago."""
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(store)
    if hit is not None and now - hit[0] < WATERMARK_CACHE_S:
        return hit[1]
    marks = watermarks(store)
    with _cache_lock:
        _cache[store] = (now, marks)
    return marks


def rollup_rows(store: Store, rollup: Rollup, where: Sequence[str] = (),
                lo_ns: int | None = None, hi_ns: int | None = None, distinct: bool = True,
                done: Mapping[str, int] | None = None) -> str:
    """A parenthesised subquery of ``rollup``'s rows whose bucket starts in ``[lo_ns, hi_ns]``
    (None: unbounded) and that match ``where`` (conditions on the series key columns).

    ``distinct=False`` lets a rolled bucket appear twice until the engine merges its copies,
    which saves grouping when the reader only takes minima, maxima or first/last by time.
    ``done``: the watermarks, when the caller has read them already (default: as read within
    the last :data:`WATERMARK_CACHE_S`)."""
    d, db = store.dialect, store.database
    marks = recent_watermarks(store) if done is None else done
    width = rollup.bucket_ns
    first = None if lo_ns is None else ceil_to(lo_ns, width)
    end = None if hi_ns is None else floor_to(hi_ns, width) + width
    mark = marks.get(rollup.name, 0)
    parts = []
    rolled_end = mark if end is None else min(end, mark)
    if mark and (first is None or first < rolled_end):
        parts.append(dedup_select(d, db, rollup, first, rolled_end, where) if distinct
                     else _rows_select(d, db, rollup, first, rolled_end, where))
    live = mark if first is None else max(first, mark)
    if end is None or live < end:
        sources = _live(d, db, rollup, where, live, end, marks, width)
        parts.extend(sources if rollup.parent is None
                     else [fold_select(rollup, sources, read_names=True)])
    if not parts:  # an empty range: the same columns, no rows
        parts.append(dedup_select(d, db, rollup, 0, 0, where))
    return "(" + " UNION ALL ".join(parts) + ")"


def minute_rows(d: Dialect, db: str, where: Sequence[str] = (), rolled: bool = True) -> str:
    """A parenthesised subquery of every 1-minute rollup row (read names, one per series and
    minute), like :func:`rollup_rows` but with the watermark read by the statement itself, so
    it can be a view's (a view takes no parameters): the rolled minutes before the watermark,
    the later ones computed from the samples (read from the rate rule's horizon before it).
    ``rolled=False`` (a store that keeps no rollups): every minute from the samples."""
    mark = watermark_sql(db, ROLLUP_1M) if rolled else "toInt64(0)"
    live = samples_select(d, db, ROLLUP_1M.bucket_ns, None, None,
                          [*where, *d.time_at_least("ts", f"{mark} - {HORIZON_NS}")])
    parts = [f"SELECT * FROM ({live}) WHERE rb >= {mark}"]
    if rolled:
        parts.insert(0, dedup_select(d, db, ROLLUP_1M, None, None,
                                     [*where, f"{d.time_ns('bucket')} < {mark}"]))
    return "(" + " UNION ALL ".join(parts) + ")"


def _live(d: Dialect, db: str, rollup: Rollup, where: Sequence[str], lo_ns: int,
          hi_ns: int | None, marks: Mapping[str, int], width_ns: int) -> list[str]:
    """SELECTs (read names) covering ``[lo_ns, hi_ns)`` from below ``rollup``: the finer
    rollup's rolled rows up to its own watermark, then the samples (in buckets of
    ``width_ns``)."""
    parent = rollup.parent
    if parent is None:
        return [samples_select(d, db, width_ns, lo_ns, hi_ns, where)]
    mark = marks.get(parent.name, 0)
    out = []
    upto = mark if hi_ns is None else min(hi_ns, mark)
    if lo_ns < upto:
        out.append(dedup_select(d, db, parent, lo_ns, upto, where))
    rest = max(lo_ns, mark)
    if hi_ns is None or rest < hi_ns:
        out.extend(_live(d, db, parent, where, rest, hi_ns, marks, width_ns))
    return out


def _rows_select(d: Dialect, db: str, rollup: Rollup, lo_ns: int | None, hi_ns: int | None,
                 where: Sequence[str]) -> str:
    """A rollup's stored rows as they are (a key may still have two), under the read names."""
    names = ", ".join(f"{a.name} AS {a.read}" for a in rollup.aggregates)
    conds = [*where, *d.time_range("bucket", lo_ns, hi_ns)]
    return (f"SELECT {d.time_ns('bucket')} AS rb, {', '.join(SERIES_KEY)}, {names} "
            f"FROM {db}.{rollup.name}" + (f" WHERE {' AND '.join(conds)}" if conds else ""))
