"""The one logical schema of the store, and its rendering per backend capability.

Tables are declared once, as logical columns; rollups are declared once, as aggregates over the
samples table. :class:`Dialect` renders both for an engine:

* ``modern`` (chDB, ClickHouse >= 20.5): ``DateTime64(9)``, ``LowCardinality``, codecs, TTL, and
  block-level insert deduplication on plain MergeTree tables;
* ``legacy`` (ClickHouse 18.16 up to 20.4): event time as ``Int64`` nanoseconds (``<col>_ns``) plus,
  for the partitioning column, a ``DateTime`` materialised from it; identifiers as
  ``LowCardinality(String)`` under 18.16's experimental setting (or plain ``String``), no codecs,
  no TTL (retention drops whole partitions from a scheduled job: :mod:`pipeline.retention`).

Every query goes through a dialect's expressions (:meth:`Dialect.time_ns`,
:meth:`Dialect.ns_to_time`, :meth:`Dialect.time_cmp`) so it gives the same answer on every
backend. Rows are keyed by their identity in a ``ReplacingMergeTree`` (samples: series and event
time), so a batch delivered twice collapses to one copy whatever the batch boundaries were; reads
use ``FINAL`` or duplicate-insensitive aggregates. Rollups keep only duplicate-insensitive
aggregate states (first/last by time, min, max, distinct sample count, OR of flags), so a repeated
insert that reaches the materialised views changes nothing either.

Cluster rendering: ``Replicated*MergeTree`` tables named ``<table>_local`` on every shard, created
``ON CLUSTER``, with a ``Distributed`` table of the logical name over them, sharded by a hash of
the row's identity (the device for samples) so duplicates always meet on the same shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LogicalType = Literal["time", "id", "string", "json", "strings", "int16", "uint8", "int64",
                      "float", "bool"]


@dataclass(frozen=True)
class Column:
    name: str
    type: LogicalType


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    order_by: tuple[str, ...]
    #: the time column that partitions the table (daily) and drives retention
    time_column: str
    #: what a cluster shards rows by: duplicates of a row must land on the same shard
    shard_by: str

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
    """One rollup column: ``<function>State(<args>)`` when written, ``<function>Merge`` when read.

    ``args`` name logical sample columns; ``ts`` stands for its nanoseconds (``Int64``)."""

    name: str
    function: str
    args: tuple[str, ...]
    arg_types: tuple[str, ...]
    help: str


#: Only duplicate-insensitive aggregates: merging a state with itself changes nothing.
ROLLUP_AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate("v_first", "argMin", ("value", "ts"), ("Float64", "Int64"),
              "the bucket's first value (by event time)"),
    Aggregate("v_last", "argMax", ("value", "ts"), ("Float64", "Int64"),
              "the bucket's last value (by event time)"),
    Aggregate("v_min", "min", ("value",), ("Float64",), "smallest value"),
    Aggregate("v_max", "max", ("value",), ("Float64",), "largest value"),
    Aggregate("t_first", "min", ("ts",), ("Int64",), "event time (ns) of the first sample"),
    Aggregate("t_last", "max", ("ts",), ("Int64",), "event time (ns) of the last sample"),
    Aggregate("n", "uniqExact", ("ts",), ("Int64",), "distinct samples (event times)"),
    Aggregate("flags_or", "groupBitOr", ("flags",), ("UInt8",),
              "OR of the samples' flags (a counter reset shows here)"),
)


@dataclass(frozen=True)
class Rollup:
    """Samples aggregated per series into fixed buckets by a materialised view: from the raw
    samples (``parent`` None), or from a finer rollup's blocks (``-MergeState``), which costs the
    server a fraction of a second view over the raw rows (measured: docs/benchmarks.md)."""

    name: str
    bucket_s: int
    #: partition granularity: ``day`` (toYYYYMMDD) or ``month`` (toYYYYMM)
    partition: Literal["day", "month"]
    aggregates: tuple[Aggregate, ...] = ROLLUP_AGGREGATES
    parent: Rollup | None = None

    @property
    def view(self) -> str:
        return f"{self.name}_mv"

    @property
    def bucket_ns(self) -> int:
        return self.bucket_s * 1_000_000_000

    def source(self, dialect: Dialect) -> str:
        """The table the view reads its blocks from on an engine."""
        return self.parent.name if self.parent and dialect.cascading_views else SAMPLES.name


ROLLUP_1M = Rollup("samples_1m", 60, "day")
ROLLUP_1H = Rollup("samples_1h", 3600, "month", parent=ROLLUP_1M)
ROLLUPS: tuple[Rollup, ...] = (ROLLUP_1M, ROLLUP_1H)


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
    def cascading_views(self) -> bool:
        """A view's insert into its TO table reaches that table's own views. 18.16 does not do
        this, so there every rollup reads the raw samples."""
        return self.name == "modern"

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
        MATERIALIZED: 18.16 neither computes materialised columns for a view's ``TO`` table nor
        lets a Distributed table forward them to its shards."""
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
            "float": "Float64 CODEC(Gorilla, ZSTD(1))" if modern else "Float64",
            "bool": "UInt8",
        }[col.type]
        return [f"{col.name} {spelled}"]

    def _engine(self, kind: str, database: str, local: str, replicated: bool) -> str:
        if replicated:
            return (f"Replicated{kind}MergeTree('/clickhouse/tables/{{shard}}/{database}.{local}',"
                    f" '{{replica}}')")
        return f"{kind}MergeTree"

    def _table_settings(self, replicated: bool) -> str:
        # Replicated tables deduplicate repeated blocks by themselves.
        if self.block_dedup and not replicated:
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
        ttl = (f"\nTTL toDateTime({t}) + INTERVAL {int(retention_days)} DAY" if self.ttl else "")
        return (f"CREATE TABLE IF NOT EXISTS {database}.{local}{on_cluster} (\n  {cols}\n)"
                f"\nENGINE = {self._engine('Replacing', database, local, replicated)}"
                f"\nPARTITION BY toYYYYMMDD({t})\nORDER BY ({order}){ttl}"
                f"{self._table_settings(replicated)}")

    def create_distributed(self, database: str, name: str, shard_by: str, cluster: str,
                           replicated: bool = True) -> str:
        """The cluster-wide table ``name`` over the ``<name>_local`` shards."""
        on_cluster = f" ON CLUSTER {cluster}" if replicated else ""
        return (f"CREATE TABLE IF NOT EXISTS {database}.{name}{on_cluster} "
                f"AS {database}.{name}_local "
                f"ENGINE = Distributed({cluster}, {database}, {name}_local, "
                f"cityHash64({shard_by}))")

    def create_rollup(self, database: str, rollup: Rollup, retention_days: int,
                      cluster: str = "", replicated: bool | None = None) -> str:
        """The AggregatingMergeTree a rollup's materialised view writes into."""
        replicated = bool(cluster) if replicated is None else replicated
        keys = [part for k in SERIES_KEY for part in self.column_ddl(SAMPLES.column(k))]
        bucket = self.column_ddl(Column("bucket", "time"), partition_time=True)
        bucket[0] = bucket[0].replace(" CODEC(DoubleDelta, ZSTD(1))", "")
        aggs = [f"{a.name} AggregateFunction({a.function}, {', '.join(a.arg_types)})"
                for a in rollup.aggregates]
        cols = ",\n  ".join([*bucket, *keys, *aggs])
        local = f"{rollup.name}_local" if cluster else rollup.name
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        part = "toYYYYMMDD" if rollup.partition == "day" else "toYYYYMM"
        order = ", ".join([*SERIES_KEY, self.stored("bucket")])
        ttl = (f"\nTTL toDateTime(bucket) + INTERVAL {int(retention_days)} DAY"
               if self.ttl else "")
        return (f"CREATE TABLE IF NOT EXISTS {database}.{local}{on_cluster} (\n  {cols}\n)"
                f"\nENGINE = {self._engine('Aggregating', database, local, replicated)}"
                f"\nPARTITION BY {part}(bucket)\nORDER BY ({order}){ttl}")

    def create_rollup_view(self, database: str, rollup: Rollup, cluster: str = "",
                           replicated: bool | None = None) -> str:
        """The materialised view that folds every block inserted into the rollup's source
        (``samples``, or the finer rollup) into the rollup."""
        replicated = bool(cluster) if replicated is None else replicated
        suffix = "_local" if cluster else ""
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        parent = rollup.parent if self.cascading_views else None
        if parent is None:
            ts = self.time_ns("ts")

            def arg(name: str) -> str:
                return ts if name == "ts" else name

            states = [f"{a.function}State({', '.join(arg(x) for x in a.args)}) AS {a.name}"
                      for a in rollup.aggregates]
        else:
            ts = self.time_ns("bucket")
            states = [f"{a.function}MergeState({a.name}) AS {a.name}"
                      for a in rollup.aggregates]
        bucket_ns = f"intDiv({ts}, {rollup.bucket_ns}) * {rollup.bucket_ns}"
        bucket = (f"fromUnixTimestamp64Nano({bucket_ns}, 'UTC') AS bucket"
                  if self.name == "modern" else
                  f"{bucket_ns} AS bucket_ns, "
                  "toDateTime(intDiv(bucket_ns, 1000000000), 'UTC') AS bucket")
        keys = ", ".join(SERIES_KEY)
        group = ", ".join([*SERIES_KEY, self.stored("bucket")])
        return (f"CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.{rollup.view}{suffix}"
                f"{on_cluster} TO {database}.{rollup.name}{suffix} AS\n"
                f"SELECT {bucket}, {keys},\n  " + ",\n  ".join(states) +
                f"\nFROM {database}.{parent.name if parent else SAMPLES.name}{suffix}"
                f"\nGROUP BY {group}")

    def schema(self, database: str, retention_days: int, rollup_retention_days: dict[str, int],
               cluster: str = "", replicated: bool | None = None,
               rollups: tuple[Rollup, ...] | None = None) -> list[str]:
        """Every statement that creates the whole store, in order (``rollups``: which of
        :data:`ROLLUPS` to keep; all by default)."""
        replicated = bool(cluster) if replicated is None else replicated
        kept = ROLLUPS if rollups is None else rollups
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        out = [f"CREATE DATABASE IF NOT EXISTS {database}{on_cluster}"]
        for table in TABLES:
            out.append(self.create_table(database, table, retention_days, cluster, replicated))
        for rollup in kept:
            out.append(self.create_rollup(database, rollup, rollup_retention_days[rollup.name],
                                          cluster, replicated))
        if cluster:
            for table in TABLES:
                out.append(self.create_distributed(database, table.name, table.shard_by,
                                                   cluster, replicated))
            for rollup in kept:
                out.append(self.create_distributed(database, rollup.name, "device", cluster,
                                                   replicated))
        for rollup in kept:
            out.append(self.create_rollup_view(database, rollup, cluster, replicated))
        return out

    @staticmethod
    def _is_time(table: Table, name: str) -> bool:
        return any(c.name == name and c.type == "time" for c in table.columns)

    def stored(self, time_col: str) -> str:
        """The physical column that holds a logical time column's nanoseconds (or the value)."""
        return time_col if self.name == "modern" else f"{time_col}_ns"

    def insert_columns(self, table: Table) -> list[str]:
        """The physical columns an insert of ``table``'s logical columns names, in order."""
        return [self.stored(c.name) if c.type == "time" else c.name for c in table.columns]

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
