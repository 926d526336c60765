"""The rollups' SQL: rolling buckets in bulk, the marks sample inserts leave, the watermarks.

A rollup bucket is rolled by one ``INSERT INTO <rollup> SELECT ... GROUP BY series, bucket``
over a whole range of buckets: from the samples for the 1-minute rollup (60 samples of a series
at 1 s become one row), from the 1-minute rows for the 1-hour rollup. Rolling a bucket again
writes the same row (or, after late samples, a row with a larger sample count), and the rollup
tables keep per series and bucket the row with the largest count (:data:`ROLLUP_VERSION`), so
every roll is safe to repeat. Readers fold the rows a key still has twice until a merge removes
one: :func:`dedup_select`.

Every sample insert also writes *marks* (:func:`bucket_marks`): the minute buckets it touched and
the event time its writer has reached (for ingest, the watermark over the partitions it reads:
:mod:`pipeline.store.rollup.clock`). The job (:mod:`pipeline.store.rollup.job`) reads them to learn
how
far the data's event time has come and which already-rolled buckets got late samples; its
progress is one row per rollup in ``rollup_state`` (:func:`state_sql`, :func:`state_insert`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.model import SampleBatch
from pipeline.rates.sql import counter_sql, judged_sql, samples_judged_sql
from pipeline.store.dialect import Dialect
from pipeline.store.rollup.history import roll_samples_sql
from pipeline.store.schema import (
    ROLLUP_1M,
    ROLLUP_MARKS,
    ROLLUP_STATE,
    ROLLUP_VERSION,
    SERIES_KEY,
    Rollup,
)

#: the read names of a rollup row besides the series key, in order (``rb``: bucket start, ns)
READ_COLUMNS: tuple[str, ...] = ("rb", *SERIES_KEY, *(a.read for a in ROLLUP_1M.aggregates))

#: a span of more buckets than this is rolled in several statements (bounds the server's memory:
#: each statement holds one aggregation state per series and bucket)
MAX_BUCKETS_PER_STATEMENT = {60: 5, 3600: 1}


def floor_to(ns: int, width_ns: int) -> int:
    """The start of the bucket of ``width_ns`` that holds ``ns``."""
    return ns // width_ns * width_ns


def ceil_to(ns: int, width_ns: int) -> int:
    """The start of the first bucket of ``width_ns`` at or after ``ns``."""
    return -(-ns // width_ns) * width_ns


def samples_select(dialect: Dialect, database: str, width_ns: int, lo_ns: int | None,
                   hi_ns: int | None, where: Sequence[str] = (), source: str | None = None,
                   ) -> str:
    """Samples with ``lo_ns <= ts < hi_ns`` aggregated per series and bucket of ``width_ns``,
    under the read names (:data:`READ_COLUMNS`). The samples come judged by the rule of
    :mod:`pipeline.rates` (read from its horizon before ``lo_ns``, or from ``source``: deduplicated
    samples holding the history the rule needs, :mod:`pipeline.store.rollup.history`), so a
    bucket's rated increase is what detection saw in the intervals ending in it."""
    judged = (samples_judged_sql(dialect, database, SERIES_KEY, where, lo_ns, hi_ns,
                                 counter_sql()) if source is None else
              judged_sql(source, SERIES_KEY, lo_ns, counter_sql()))
    aggs = ", ".join(f"{a.from_samples.format(ts='t')} AS {a.read}"
                     for a in ROLLUP_1M.aggregates)
    return (f"SELECT toInt64(intDiv(t, {width_ns}) * {width_ns}) AS rb, "
            f"{', '.join(SERIES_KEY)}, {aggs} FROM ({judged}) "
            f"GROUP BY {', '.join(SERIES_KEY)}, rb")


def dedup_select(dialect: Dialect, database: str, rollup: Rollup, lo_ns: int | None,
                 hi_ns: int | None, where: Sequence[str] = ()) -> str:
    """A rollup's rows with bucket start in ``[lo_ns, hi_ns)``, one per series and bucket (the
    one with the largest sample count, as a merge would keep), under the read names."""
    version = ROLLUP_VERSION
    aggs = ", ".join(
        f"max({a.name}) AS {a.read}" if a.name == version else f"argMax({a.name}, {version}) "
        f"AS {a.read}" for a in rollup.aggregates)
    conds = [*where, *dialect.time_range("bucket", lo_ns, hi_ns)]
    return (f"SELECT {dialect.time_ns('bucket')} AS rb, {', '.join(SERIES_KEY)}, {aggs} "
            f"FROM {database}.{rollup.name}"
            + (f" WHERE {' AND '.join(conds)}" if conds else "")
            + f" GROUP BY {', '.join(SERIES_KEY)}, rb")


def fold_select(rollup: Rollup, sources: Sequence[str], read_names: bool) -> str:
    """Rows under the read names from ``sources`` (SELECTs of finer buckets of the same series)
    folded into ``rollup``'s buckets: under the table's column names, or the read names."""
    width = rollup.bucket_ns
    union = " UNION ALL ".join(sources)
    aggs = ", ".join(f"{a.fold} AS {a.name}" for a in rollup.aggregates)
    folded = (f"SELECT toInt64(intDiv(rb, {width}) * {width}) AS bucket, "
              f"{', '.join(SERIES_KEY)}, {aggs} FROM ({union}) "
              f"GROUP BY {', '.join(SERIES_KEY)}, bucket")
    if not read_names:
        return folded
    renamed = ", ".join(f"{a.name} AS {a.read}" for a in rollup.aggregates)
    return f"SELECT bucket AS rb, {', '.join(SERIES_KEY)}, {renamed} FROM ({folded})"


def roll_sql(dialect: Dialect, database: str, rollup: Rollup, lo_ns: int, hi_ns: int,
             rows: str | None = None) -> str:
    """The statement that rolls every bucket of ``rollup`` starting in ``[lo_ns, hi_ns)`` (both
    on bucket boundaries) from its source: the samples, or the parent rollup's rows. ``rows``
    (the first rollup only): where its rows are read that prove a series needs less history
    than the rule's horizon (:func:`pipeline.store.rollup.history.rows_relation`); None reads the
    whole horizon for every series. Either way the rows rolled are the same."""
    columns = ", ".join(dialect.insert_columns(rollup.table))
    bucket = dialect.ns_expr_to_stored("rb")
    aggs = ", ".join(a.read for a in rollup.aggregates)
    if rollup.parent is None:
        source = roll_samples_sql(dialect, database, lo_ns, hi_ns, rows)
        samples = samples_select(dialect, database, rollup.bucket_ns, lo_ns, hi_ns,
                                 source=source)
        select = f"SELECT {bucket}, {', '.join(SERIES_KEY)}, {aggs} FROM ({samples})"
    else:
        source = dedup_select(dialect, database, rollup.parent, lo_ns, hi_ns)
        select = (f"SELECT {bucket}, {', '.join(SERIES_KEY)}, {aggs} FROM "
                  f"({fold_select(rollup, [source], read_names=True)})")
    return f"INSERT INTO {database}.{rollup.name} ({columns}) {select}"


def roll_ranges(buckets: Sequence[int], rollup: Rollup) -> list[tuple[int, int]]:
    """Sorted bucket starts → ``[lo, hi)`` ranges of adjacent buckets, each at most
    :data:`MAX_BUCKETS_PER_STATEMENT` long."""
    width = rollup.bucket_ns
    most = MAX_BUCKETS_PER_STATEMENT.get(rollup.bucket_s, 1) * width
    out: list[tuple[int, int]] = []
    for b in sorted(set(buckets)):
        if out and out[-1][1] == b and b + width - out[-1][0] <= most:
            out[-1] = (out[-1][0], b + width)
        else:
            out.append((b, b + width))
    return out


def statement_span(rollup: Rollup) -> int:
    """The most ns of buckets one statement rolls."""
    return MAX_BUCKETS_PER_STATEMENT.get(rollup.bucket_s, 1) * rollup.bucket_ns


# -- marks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Marks:
    """What one sample insert leaves for the rollup job."""

    #: the minute buckets the insert touched (sorted bucket starts, ns)
    buckets: list[int]
    #: the event time the writer's data has reached (ns)
    event_ns: int


def bucket_marks(batch: SampleBatch, event_ns: int | None = None,
                 width_ns: int = ROLLUP_1M.bucket_ns) -> Marks | None:
    """The marks of a batch (None for an empty one), with ``event_ns`` as the event time reached
    (default: the batch's newest sample). A batch of a poll or two touches one or two buckets,
    found from its first and last times; only a wider one is sorted out in full."""
    if not len(batch):
        return None
    lo, hi = int(batch.ts_ns.min()), int(batch.ts_ns.max())
    first, last = lo // width_ns, hi // width_ns
    if last - first <= 1:
        codes = list(range(first, last + 1))
    else:
        codes = [int(c) for c in np.unique(batch.ts_ns // width_ns)]
    return Marks([c * width_ns for c in codes], hi if event_ns is None else event_ns)


def marks_insert(dialect: Dialect, database: str) -> str:
    """``INSERT ... VALUES`` for marks (the server stamps ``at``)."""
    return (f"INSERT INTO {database}.{ROLLUP_MARKS.name} "
            f"({', '.join(dialect.insert_columns(ROLLUP_MARKS))}) VALUES")


def marks_values(marks: Marks) -> str:
    """The marks as a ``VALUES`` list (for engines that take the statement as text)."""
    return ", ".join(f"({int(b)}, {int(marks.event_ns)})" for b in marks.buckets)


def marked_buckets_sql(database: str, width_ns: int, lo_ns: int, hi_ns: int, limit: int) -> str:
    """The first ``limit`` buckets of ``width_ns`` in ``[lo_ns, hi_ns)`` that some insert marked
    (the buckets that hold samples), in order."""
    return (f"SELECT DISTINCT toInt64(intDiv(bucket_ns, {width_ns}) * {width_ns}) AS b "
            f"FROM {database}.{ROLLUP_MARKS.name} WHERE bucket_ns >= {int(lo_ns)} "
            f"AND bucket_ns < {int(hi_ns)} ORDER BY b LIMIT {int(limit)}")


def marks_since_sql(database: str, scanned_s: int) -> str:
    """The marks written since ``scanned_s`` (server seconds, inclusive), per bucket and second
    written: ``bucket``, ``at`` (seconds), how many (``marks``) and the newest ``event``."""
    return (f"SELECT bucket_ns AS bucket, toUInt64(at) AS at_s, count() AS marks, "
            f"max(event_ns) AS event FROM {database}.{ROLLUP_MARKS.name} "
            f"WHERE at >= toDateTime({int(scanned_s)}, 'UTC') GROUP BY bucket, at_s "
            f"ORDER BY bucket, at_s")


# -- watermarks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """One rollup's progress, as kept in ``rollup_state``."""

    #: every bucket starting before this is rolled (0: nothing yet)
    done_ns: int = 0
    #: marks written at or after this server second are not yet accounted for
    scanned_s: int = 0
    #: the newest event time the data had reached
    event_ns: int = 0


def state_sql(database: str) -> str:
    """Each rollup's state (``name``, ``done``, ``scanned``, ``event``). Every field only grows,
    so the largest of each is the state whatever rows a merge has not yet replaced."""
    return (f"SELECT rollup_table AS name, max(done_ns) AS done, max(scanned) AS scanned_s, "
            f"max(event_ns) AS event FROM {database}.{ROLLUP_STATE.name} GROUP BY rollup_table")


def watermark_sql(database: str, rollup: Rollup) -> str:
    """A scalar subquery of ``rollup``'s watermark (ns; 0 before its first roll): for a
    statement that must read it itself (a view)."""
    return (f"(SELECT toInt64(max(done_ns)) FROM {database}.{ROLLUP_STATE.name} "
            f"WHERE rollup_table = '{rollup.name}')")


def state_insert(database: str, states: dict[str, State]) -> str:
    """The statement that records states (one row per rollup). ``INSERT ... SELECT`` rather than
    ``VALUES``: over the native protocol a ``VALUES`` insert sends its rows as data blocks."""
    rows = " UNION ALL ".join(
        f"SELECT '{name}', toInt64({int(s.done_ns)}), toUInt64({int(s.scanned_s)}), "
        f"toInt64({int(s.event_ns)})" for name, s in sorted(states.items()))
    return (f"INSERT INTO {database}.{ROLLUP_STATE.name} "
            f"(rollup_table, done_ns, scanned, event_ns) {rows}")
