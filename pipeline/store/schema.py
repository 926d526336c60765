"""The one logical schema of the store, and its rendering per backend capability.

Tables are declared once, as logical columns; the rollups are declared once, as aggregates over
the samples table. :class:`Dialect` renders both for an engine:

* ``modern`` (chDB, ClickHouse >= 20.5): ``DateTime64(9)``, ``LowCardinality``, codecs, TTL, and
  block-level insert deduplication on plain MergeTree tables;
* ``legacy`` (ClickHouse 18.16 up to 20.4): event time as ``Int64`` nanoseconds (``<col>_ns``) plus,
  for the partitioning column, a ``DateTime`` computed from it; identifiers as
  ``LowCardinality(String)`` under 18.16's experimental setting (or plain ``String``), no codecs,
  no TTL (retention drops whole partitions from a scheduled job: :mod:`pipeline.store.retention`).

Every query goes through a dialect's expressions (:meth:`Dialect.time_ns`,
:meth:`Dialect.ns_to_time`, :meth:`Dialect.time_cmp`, :meth:`Dialect.time_range`) so it gives the
same answer on every backend. Rows are keyed by their identity in a ``ReplacingMergeTree``
(samples: series and event time), so a batch delivered twice collapses to one copy whatever the
batch boundaries were; reads use ``FINAL`` or duplicate-insensitive aggregates.

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

TABLES: tuple[Table, ...] = (SAMPLES, ALERTS, ACTIONS)

#: ns → the value stored for a time column when an alert has no end yet.
NO_TIME = 0

#: The series key of a sample (what identifies one time series).
SERIES_KEY: tuple[str, ...] = ("device", "port", "metric", "qual")



@dataclass(frozen=True)
class Aggregate:
    """One rollup column: how it is computed from samples and how finer rollup rows fold into it.

    ``from_samples`` is over the samples of one series and bucket, ``{ts}`` standing for the event
    time in ns (``Int64``); ``fold`` is over finer rows of one series, read under their ``read``
    names (the names every reader of a rollup sees: :mod:`pipeline.store.rollup.read`)."""

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


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the logical schema and the time expressions queries need."""

    name: Literal["modern", "legacy"]
    #: identifiers as LowCardinality(String) (legacy: needs allow_experimental_low_cardinality_type)
    low_cardinality: bool = True
    #: the engine deduplicates a repeated identical insert block on plain MergeTree tables
    #: (``non_replicated_deduplication_window``, ClickHouse >= 21.1; chDB)
    block_dedup: bool = False

    @property
    def ttl(self) -> bool:
        """Retention by TTL (else by dropping partitions from a job)."""
        return self.name == "modern"

    @property
    def settings(self) -> dict[str, int]:
        """Session settings the DDL and inserts need on this engine."""
        if self.name == "legacy" and self.low_cardinality:
            return {"allow_experimental_low_cardinality_type": 1}
        return {}

    # -- DDL --------------------------------------------------------------------------------

    def column_ddl(self, col: Column, partition_time: bool = False) -> list[str]:
        """A column's definition(s). Legacy time columns are ``<name>_ns Int64``; the one that
        partitions the table also gets a ``DateTime`` computed from it. That one is DEFAULT, not
        MATERIALIZED: 18.16 lets no Distributed table forward a materialised column."""
        modern = self.name == "modern"
        if col.type == "time":
            if modern:
                return [f"{col.name} DateTime64(9, 'UTC') CODEC(DoubleDelta, ZSTD(1))"]
            out = [f"{col.name}_ns Int64"]
            if partition_time:
                out.append(f"{col.name} DateTime('UTC') DEFAULT "
                           f"toDateTime(intDiv({col.name}_ns, 1000000000), 'UTC')")
            return out
        ident = "LowCardinality(String)" if self.low_cardinality else "String"
        spelled = {
            "id": ident,
            "string": "String",
            "json": "String CODEC(ZSTD(1))" if modern else "String",
            "strings": "Array(String)",
            "int16": "Int16",
            "uint8": "UInt8",
            "int64": "Int64",
            "count": "UInt64",
            "float": "Float64 CODEC(Gorilla, ZSTD(1))" if modern else "Float64",
            "bool": "UInt8",
            "inserted": "DateTime('UTC') DEFAULT now()",
        }[col.type]
        return [f"{col.name} {spelled}"]

    def _engine(self, table: Table, database: str, local: str, replicated: bool) -> str:
        kind = "ReplacingMergeTree" if table.replacing else "MergeTree"
        version = table.version if table.replacing else ""
        if replicated:
            args = f"'/clickhouse/tables/{{shard}}/{database}.{local}', '{{replica}}'"
            return f"Replicated{kind}({args}{', ' + version if version else ''})"
        return f"{kind}({version})" if version else kind

    def _table_settings(self, table: Table, replicated: bool) -> str:
        # Replicated tables deduplicate repeated blocks by themselves.
        if self.block_dedup and table.dedup_blocks and not replicated:
            return "\nSETTINGS non_replicated_deduplication_window = 1000"
        return ""

    def create_table(self, database: str, table: Table, retention_days: int,
                     cluster: str = "", replicated: bool | None = None) -> str:
        """``CREATE TABLE`` for a logical table (``<name>_local`` when ``cluster`` is set)."""
        replicated = bool(cluster) if replicated is None else replicated
        t = table.time_column
        cols = ",\n  ".join(part for c in table.columns
                            for part in self.column_ddl(c, partition_time=c.name == t))
        local = f"{table.name}_local" if cluster else table.name
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        order = ", ".join(self.stored(c) if table.column(c).type == "time" else c
                          for c in table.order_by)
        partition = {"day": f"toYYYYMMDD({t})", "month": f"toYYYYMM({t})",
                     "none": "tuple()"}[table.partition]
        ttl = (f"\nTTL toDateTime({t}) + INTERVAL {int(retention_days)} DAY"
               if self.ttl and table.expires else "")
        return (f"CREATE TABLE IF NOT EXISTS {database}.{local}{on_cluster} (\n  {cols}\n)"
                f"\nENGINE = {self._engine(table, database, local, replicated)}"
                f"\nPARTITION BY {partition}\nORDER BY ({order}){ttl}"
                f"{self._table_settings(table, replicated)}")

    def create_distributed(self, database: str, name: str, shard_by: str, cluster: str,
                           replicated: bool = True) -> str:
        """The cluster-wide table ``name`` over the ``<name>_local`` shards."""
        on_cluster = f" ON CLUSTER {cluster}" if replicated else ""
        return (f"CREATE TABLE IF NOT EXISTS {database}.{name}{on_cluster} "
                f"AS {database}.{name}_local "
                f"ENGINE = Distributed({cluster}, {database}, {name}_local, "
                f"cityHash64({shard_by}))")

    def schema(self, database: str, retention_days: int, rollup_retention_days: dict[str, int],
               cluster: str = "", replicated: bool | None = None,
               rollups: tuple[Rollup, ...] | None = None) -> list[str]:
        """Every statement that creates the whole store, in order (``rollups``: which of
        :data:`ROLLUPS` to keep, with the rollup job's bookkeeping; all by default)."""
        replicated = bool(cluster) if replicated is None else replicated
        kept = ROLLUPS if rollups is None else rollups
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        tables = [(t, retention_days) for t in TABLES]
        tables += [(r.table, rollup_retention_days[r.name]) for r in kept]
        if kept:
            tables += [(t, retention_days) for t in ROLLUP_TABLES]
        out = [f"CREATE DATABASE IF NOT EXISTS {database}{on_cluster}"]
        out += [self.create_table(database, t, days, cluster, replicated) for t, days in tables]
        if cluster:
            out += [self.create_distributed(database, t.name, t.shard_by, cluster, replicated)
                    for t, _ in tables]
        return out

    def stored(self, time_col: str) -> str:
        """The physical column that holds a logical time column's nanoseconds (or the value)."""
        return time_col if self.name == "modern" else f"{time_col}_ns"

    def insert_columns(self, table: Table) -> list[str]:
        """The physical columns an insert of ``table``'s logical columns names, in order (a
        column the server fills, ``inserted``, is left out)."""
        return [self.stored(c.name) if c.type == "time" else c.name for c in table.columns
                if c.type != "inserted"]

    # -- query expressions -----------------------------------------------------------------

    def time_ns(self, col: str) -> str:
        """An Int64 expression of a time column's nanoseconds since the epoch."""
        if self.name == "modern":
            return f"toUnixTimestamp64Nano({col})"
        return f"{col}_ns"

    def ns_to_time(self, ns: int) -> str:
        """A literal comparable with :meth:`time_cmp` of a time column (``WHERE ts >= ...``)."""
        if self.name == "modern":
            return f"fromUnixTimestamp64Nano(toInt64({int(ns)}), 'UTC')"
        return f"toInt64({int(ns)})"

    def time_cmp(self, col: str) -> str:
        """The expression to compare against :meth:`ns_to_time` literals (uses the sort key)."""
        return col if self.name == "modern" else f"{col}_ns"

    def ns_expr_to_stored(self, expr: str) -> str:
        """An Int64 ns expression as the value of a time column's stored column (for
        ``INSERT ... SELECT``)."""
        if self.name == "modern":
            return f"fromUnixTimestamp64Nano({expr}, 'UTC')"
        return expr

    def time_range(self, col: str, lo_ns: int | None, hi_ns: int | None) -> list[str]:
        """Conditions ``lo_ns <= col < hi_ns`` on a table's partitioning time column (either
        bound may be None), spelled so the engine skips the parts and partitions outside the
        range: on legacy servers that takes a condition on the ``DateTime`` column too, as the
        parts' min/max index is over it, not over the nanoseconds."""
        cmp = self.time_cmp(col)
        out = []
        if lo_ns is not None:
            out.append(f"{cmp} >= {self.ns_to_time(lo_ns)}")
            if self.name == "legacy" and 0 < lo_ns < _DATETIME_END_NS:
                out.append(f"{col} >= toDateTime({lo_ns // 1_000_000_000}, 'UTC')")
        if hi_ns is not None:
            out.append(f"{cmp} < {self.ns_to_time(hi_ns)}")
            if self.name == "legacy" and 0 < hi_ns < _DATETIME_END_NS:
                out.append(f"{col} <= toDateTime({(hi_ns - 1) // 1_000_000_000}, 'UTC')")
        return out


#: DateTime ends in 2106 (an unsigned 32-bit count of seconds)
_DATETIME_END_NS = (1 << 32) * 1_000_000_000

MODERN = Dialect("modern", low_cardinality=True, block_dedup=True)
LEGACY = Dialect("legacy", low_cardinality=True)
LEGACY_STRING = Dialect("legacy", low_cardinality=False)


def dialect_for_version(version: tuple[int, ...], low_cardinality: bool = True) -> Dialect:
    """The dialect a ClickHouse server of this version speaks.

    DateTime64 with ``toUnixTimestamp64Nano`` arrived in 20.5; the deduplication window for plain
    MergeTree tables in 21.1. Older servers get the legacy rendering."""
    if version >= (20, 5):
        return Dialect("modern", low_cardinality=True, block_dedup=version >= (21, 1))
    return Dialect("legacy", low_cardinality=low_cardinality)
