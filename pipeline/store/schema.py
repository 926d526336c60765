"""The one logical schema of the store: its tables and its rollups, declared once.

Tables are declared once, as logical columns; the rollups are declared once, as aggregates over
the samples table; :mod:`pipeline.store.dialect` renders both for an engine. A time column is
named after the model's field without its unit (``ts_ns`` → ``ts``, ``starts_ns`` → ``starts``);
the legacy rendering stores its nanoseconds as ``<name>_ns``, the field's name again.

Rows are keyed by their identity in a ``ReplacingMergeTree`` (samples: series and event time), so
a batch delivered twice collapses to one copy whatever the batch boundaries were; reads use
``FINAL`` or duplicate-insensitive aggregates.

The rollups (1-minute and 1-hour) hold one row per series and bucket with plain values (first,
last, min, max, first/last event time, distinct samples, OR of flags), in a
``ReplacingMergeTree`` keyed by series and bucket whose version is the sample count: a bucket
rolled again (a retry, late data) replaces its row, and the row that saw more samples wins. The
scheduled job of :mod:`pipeline.store.rollup.job` fills them in bulk from the samples (the hour from
the minutes); ``rollup_marks`` (the minute buckets each insert touched, written by the store) and
``rollup_state`` (each rollup's watermark) are its bookkeeping, kept in the store.

Cluster rendering: ``Replicated*MergeTree`` tables named ``<table>_local`` on every shard, created
``ON CLUSTER``, with a ``Distributed`` table of the logical name over them, sharded by a hash of
the row's identity (the device for samples and rollups) so duplicates always meet on the same
shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LogicalType = Literal["time", "id", "string", "json", "strings", "int16", "uint8", "int64",
                      "float", "bool", "count", "inserted"]
Partition = Literal["day", "month", "none"]


@dataclass(frozen=True)
class Column:
    name: str
    type: LogicalType


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    order_by: tuple[str, ...]
    #: the time column that partitions the table and drives retention
    time_column: str
    #: what a cluster shards rows by: duplicates of a row must land on the same shard
    shard_by: str
    #: rows with the same sort key collapse (ReplacingMergeTree); else every row stays
    replacing: bool = True
    #: ReplacingMergeTree's version column: of rows with the same key, the largest wins
    #: ("": the last inserted)
    version: str = ""
    #: partitions of ``time_column``: by day, by month, or one partition
    partition: Partition = "day"
    #: rows expire after the table's retention (TTL, or the retention job)
    expires: bool = True
    #: the engine may drop a repeated identical insert block (plain MergeTree, modern engines)
    dedup_blocks: bool = True

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


SAMPLES = Table(
    "samples",
    (Column("ts", "time"), Column("device", "id"), Column("port", "id"), Column("metric", "id"),
     Column("qual", "int16"), Column("value", "float"), Column("flags", "uint8")),
    order_by=("device", "port", "metric", "qual", "ts"),
    time_column="ts",
    shard_by="device",
)

ALERTS = Table(
    "alerts",
    (Column("updated", "time"), Column("fingerprint", "id"), Column("name", "id"),
     Column("entity", "id"), Column("severity", "id"), Column("status", "id"),
     Column("starts", "time"), Column("ends", "time"), Column("root_cause", "bool"),
     Column("confidence", "float"), Column("ports", "strings"), Column("explains", "strings"),
     Column("inhibited_by", "string"), Column("source", "id"), Column("labels", "json"),
     Column("annotations", "json"), Column("evidence", "json")),
    order_by=("fingerprint", "starts", "updated"),
    time_column="updated",
    shard_by="fingerprint",
)

ACTIONS = Table(
    "actions",
    (Column("at", "time"), Column("id", "string"), Column("action", "id"), Column("target", "id"),
     Column("alert_fingerprint", "string"), Column("alert_name", "id"), Column("mode", "id"),
     Column("outcome", "id"), Column("detail", "string"), Column("steps", "json")),
    order_by=("at", "id"),
    time_column="at",
    shard_by="id",
)

#: what each port's LLDP neighbour was from ``ts`` on, one row per change
#: (:mod:`pipeline.store.neighbors`); kept as long as the store (a port whose neighbour never
#: changes has one row, however old)
NEIGHBORS = Table(
    "neighbors",
    (Column("ts", "time"), Column("device", "id"), Column("port", "id"),
     Column("present", "bool"), Column("chassis_id", "id"), Column("chassis_id_type", "id"),
     Column("port_id", "id"), Column("port_id_type", "id"), Column("port_description", "string"),
     Column("system_name", "id")),
    order_by=("device", "port", "ts"),
    time_column="ts",
    shard_by="device",
    partition="month",
    expires=False,
)

TABLES: tuple[Table, ...] = (SAMPLES, ALERTS, ACTIONS, NEIGHBORS)

#: ns → the value stored for a time column when an alert has no end yet.
NO_TIME = 0

#: The series key of a sample (what identifies one time series).
SERIES_KEY: tuple[str, ...] = ("device", "port", "metric", "qual")



@dataclass(frozen=True)
class Aggregate:
    """One rollup column: how it is computed from samples and how finer rollup rows fold into it.

    ``from_samples`` is over the judged samples of one series and bucket
    (:func:`pipeline.rates.sql.samples_judged_sql`: ``value``, ``flags``, ``rated_inc``, ...),
    ``{ts}`` standing for the event time in ns (``Int64``); ``fold`` is over finer rows of one
    series, read under their ``read`` names (the names every reader of a rollup sees:
    :mod:`pipeline.store.rollup.read`)."""

    name: str
    type: LogicalType
    read: str
    from_samples: str
    fold: str
    help: str


ROLLUP_AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate("v_first", "float", "v0", "argMin(value, {ts})", "argMin(v0, t0)",
              "the bucket's first value (by event time)"),
    Aggregate("v_last", "float", "v1", "argMax(value, {ts})", "argMax(v1, t1)",
              "the bucket's last value (by event time)"),
    Aggregate("v_min", "float", "vmin", "min(value)", "min(vmin)", "smallest value"),
    Aggregate("v_max", "float", "vmax", "max(value)", "max(vmax)", "largest value"),
    Aggregate("t_first", "int64", "t0", "min({ts})", "min(t0)",
              "event time (ns) of the first sample"),
    Aggregate("t_last", "int64", "t1", "max({ts})", "max(t1)",
              "event time (ns) of the last sample"),
    Aggregate("n", "count", "cnt", "uniqExact({ts})", "sum(cnt)",
              "distinct samples (event times); the row's version"),
    Aggregate("flags_or", "uint8", "fl", "groupBitOr(flags)", "groupBitOr(fl)",
              "OR of the samples' flags (a counter reset shows here)"),
    # the rule of pipeline.rates: samples arrive judged (pipeline.rates.sql.samples_judged_sql)
    Aggregate("rated_inc", "float", "ri", "sum(rated_inc)", "sum(ri)",
              "a counter's increase over the intervals with a rate that end in the bucket"),
    Aggregate("rated_ns", "int64", "rn", "sum(rated_ns)", "sum(rn)",
              "the total length (ns) of those intervals: the bucket's rate is ri / rn"),
)
#: the version of a rollup row: a bucket rolled from more samples replaces one rolled from fewer
ROLLUP_VERSION = "n"


@dataclass(frozen=True)
class Rollup:
    """Samples aggregated per series into fixed buckets: from the raw samples (``parent`` None) or
    by folding a finer rollup's rows (the hour from the minutes)."""

    name: str
    bucket_s: int
    partition: Literal["day", "month"]
    aggregates: tuple[Aggregate, ...] = ROLLUP_AGGREGATES
    parent: Rollup | None = None

    @property
    def bucket_ns(self) -> int:
        return self.bucket_s * 1_000_000_000

    @property
    def table(self) -> Table:
        keys = tuple(SAMPLES.column(k) for k in SERIES_KEY)
        aggs = tuple(Column(a.name, a.type) for a in self.aggregates)
        return Table(self.name, (Column("bucket", "time"), *keys, *aggs),
                     order_by=(*SERIES_KEY, "bucket"), time_column="bucket", shard_by="device",
                     version=ROLLUP_VERSION, partition=self.partition)


ROLLUP_1M = Rollup("samples_1m", 60, "day")
ROLLUP_1H = Rollup("samples_1h", 3600, "month", parent=ROLLUP_1M)
ROLLUPS: tuple[Rollup, ...] = (ROLLUP_1M, ROLLUP_1H)

#: the minute buckets each sample insert touched, and the newest event time it carried: what the
#: rollup job reads to learn the data's event time and which rolled buckets got late samples
#: (``at`` is the server's clock when the mark was written)
ROLLUP_MARKS = Table(
    "rollup_marks",
    (Column("at", "inserted"), Column("bucket_ns", "int64"), Column("event_ns", "int64")),
    order_by=("at", "bucket_ns"),
    time_column="at",
    shard_by="bucket_ns",
    replacing=False,  # the job counts them
    dedup_blocks=False,
)

#: each rollup's watermark: every bucket before ``done_ns`` is rolled, marks written before
#: ``scanned`` (server seconds) are accounted for, and the data's event time reached ``event_ns``
ROLLUP_STATE = Table(
    "rollup_state",
    (Column("rollup_table", "id"), Column("done_ns", "int64"), Column("scanned", "count"),
     Column("event_ns", "int64")),
    order_by=("rollup_table",),
    time_column="",
    shard_by="rollup_table",
    version="scanned",
    partition="none",
    expires=False,
    dedup_blocks=False,
)

#: the bookkeeping tables of the rollup job (present when the store keeps rollups)
ROLLUP_TABLES: tuple[Table, ...] = (ROLLUP_MARKS, ROLLUP_STATE)


def stored_tables(rollups: tuple[Rollup, ...] = ROLLUPS) -> tuple[Table, ...]:
    """Every table of a store that keeps ``rollups``, in the order they are created."""
    return (*TABLES, *(r.table for r in rollups), *(ROLLUP_TABLES if rollups else ()))
