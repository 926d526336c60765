"""The samples a minute roll judges: its buckets, and before them the history the rate rule needs,
read in full only for the series whose rollup row of the minute before does not prove it needs
less.

The rule (:mod:`pipeline.rates.rule`) judges a sample from the :data:`LOOKBACK` samples before it
(its previous value and time, and the cadence: the median of the intervals between them), among
the samples read from :data:`~pipeline.rates.rule.HORIZON_NS` before the range judged
(:func:`pipeline.rates.sql.samples_judged_sql`). A roll of the buckets ``[lo, hi)`` used to read
every series' samples from ``lo - HORIZON_NS`` on: 120 s of history for a one-minute roll, so each
minute was read three times (once rolled, twice as history).

A series whose minute bucket just before ``lo`` holds at least :data:`LOOKBACK` samples needs no
sample older than that bucket: the ``LOOKBACK`` newest samples before any sample from ``lo`` on
all lie in it, so the rule judges every sample from ``lo`` on from the same samples whether the
read starts at the horizon or at that bucket. The bucket's rollup row proves it: its count
(``n``, :data:`~pipeline.store.schema.ROLLUP_VERSION`) is of distinct sample times, and a row
only ever counts samples the store holds (a late sample makes a new row with a larger count, never
a smaller one), so any row of the bucket with ``n >= LOOKBACK``, however stale, is proof. So a
roll reads ``[lo - bucket, hi)`` for every series and the rest of the horizon only for the series
without such a row (``NOT IN`` the proven ones): a series whose row is missing, not rolled yet,
unreadable on a cluster or short reads the whole horizon as before. Nothing here depends on the
job's memory, on which process rolled the bucket before, or on when: a restart, a late re-roll and
several ingest processes read what they read before, less the samples that cannot change the
judgement.

On a cluster the proof is read from the shard's own rows (the ``_local`` table, in the shard-local
part of the distributed read): the samples and the rollups are sharded alike (by device), so a
series' samples and its rows sit on the same shard and no set crosses the network.
"""

from __future__ import annotations

from pipeline.rates.rule import CADENCE_INTERVALS, HORIZON_NS
from pipeline.rates.sql import deduped_sql
from pipeline.store.dialect import Dialect, local_name
from pipeline.store.schema import ROLLUP_1M, ROLLUP_VERSION, SERIES_KEY

#: how many samples before a judged one the rule looks at (its previous one and the cadence's
#: intervals: :func:`pipeline.rates.rule.sample_times` past the sample itself)
LOOKBACK = CADENCE_INTERVALS + 1


def rows_relation(database: str, cluster: str = "") -> str:
    """Where a roll reads the first rollup's rows that prove a series' history short: the table,
    or on a cluster the shard's local table (read in the shard-local part of the query)."""
    return f"{database}.{local_name(ROLLUP_1M.name, cluster)}"


def proven_sql(dialect: Dialect, rows: str, lo_ns: int) -> str:
    """The series (keys) whose minute bucket before ``lo_ns`` holds at least :data:`LOOKBACK`
    samples, by any of its rows in ``rows``."""
    width = ROLLUP_1M.bucket_ns
    conds = [*dialect.time_range("bucket", lo_ns - width, lo_ns), f"{ROLLUP_VERSION} >= {LOOKBACK}"]
    return f"SELECT {', '.join(SERIES_KEY)} FROM {rows} WHERE {' AND '.join(conds)}"


def roll_samples_sql(dialect: Dialect, database: str, lo_ns: int, hi_ns: int,
                     rows: str | None) -> str:
    """The deduplicated samples (:func:`pipeline.rates.sql.deduped_sql`) a roll of the minute
    buckets ``[lo_ns, hi_ns)`` judges: from the horizon before ``lo_ns`` for every series when
    ``rows`` is None; else from the bucket before ``lo_ns`` for the series ``rows`` proves need no
    more (:func:`proven_sql`) and from the horizon for the others."""
    width = ROLLUP_1M.bucket_ns
    start = lo_ns - HORIZON_NS
    if rows is None or width >= HORIZON_NS:
        return deduped_sql(dialect, database, SERIES_KEY, [], start, hi_ns)
    mid = lo_ns - width
    recent = deduped_sql(dialect, database, SERIES_KEY, [], mid, hi_ns)
    unproven = f"({', '.join(SERIES_KEY)}) NOT IN ({proven_sql(dialect, rows, lo_ns)})"
    older = deduped_sql(dialect, database, SERIES_KEY, [unproven], start, mid)
    return f"{recent} UNION ALL {older}"
