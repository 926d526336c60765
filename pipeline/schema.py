"""The one logical schema of the store, and its rendering per backend capability.

Tables are declared once, as logical columns. :class:`Dialect` renders them for an engine:

* ``modern`` (chDB, ClickHouse >= 20): ``DateTime64(9)``, ``LowCardinality``, codecs, TTL;
* ``legacy`` (ClickHouse 18.16): event time as ``Int64`` nanoseconds plus a ``DateTime`` column
  materialised from it for partitioning, plain ``String`` identifiers, no codecs, no TTL (retention
  drops whole daily partitions from a scheduled job).

Every query goes through a dialect's expressions (:meth:`Dialect.time_ns`, :meth:`Dialect.ns_to_time`)
so it gives the same answer on every backend. Samples are keyed by their series and event time in
a ``ReplacingMergeTree``: a batch delivered twice collapses to one copy, which makes ingest
idempotent whatever the batch boundaries were; queries use duplicate-insensitive aggregates
(``max``, ``min``, ``any``, ``argMax``) or ``FINAL``.
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
    time_column: str

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


SAMPLES = Table(
    "samples",
    (Column("ts", "time"), Column("device", "id"), Column("port", "id"), Column("metric", "id"),
     Column("qual", "int16"), Column("value", "float"), Column("flags", "uint8")),
    order_by=("device", "port", "metric", "qual", "ts"),
    time_column="ts",
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
)

ACTIONS = Table(
    "actions",
    (Column("at", "time"), Column("id", "string"), Column("action", "id"), Column("target", "id"),
     Column("alert_fingerprint", "string"), Column("alert_name", "id"), Column("mode", "id"),
     Column("outcome", "id"), Column("detail", "string"), Column("steps", "json")),
    order_by=("at", "id"),
    time_column="at",
)

TABLES: tuple[Table, ...] = (SAMPLES, ALERTS, ACTIONS)

#: ns → the value stored for a time column when an alert has no end yet.
NO_TIME = 0


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the logical schema and the time expressions queries need."""

    name: Literal["modern", "legacy"]

    # -- DDL --------------------------------------------------------------------------------

    def column_ddl(self, col: Column) -> list[str]:
        modern = self.name == "modern"
        if col.type == "time":
            if modern:
                return [f"{col.name} DateTime64(9, 'UTC') CODEC(DoubleDelta, ZSTD(1))"]
            return [f"{col.name}_ns Int64",
                    f"{col.name} DateTime MATERIALIZED toDateTime(intDiv({col.name}_ns, 1000000000))"]
        spelled = {
            "id": "LowCardinality(String)" if modern else "String",
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

    def create_table(self, database: str, table: Table, retention_days: int,
                     cluster: str = "") -> str:
        cols = ",\n  ".join(part for c in table.columns for part in self.column_ddl(c))
        on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
        engine = "ReplacingMergeTree"
        if cluster:
            engine = (f"ReplicatedReplacingMergeTree('/clickhouse/tables/{{shard}}/{database}."
                      f"{table.name}', '{{replica}}')")
        t = table.time_column
        partition = f"toYYYYMMDD({t})"
        order = ", ".join(self.stored(c) if c == t or self._is_time(table, c) else c
                          for c in table.order_by)
        ttl = (f"\nTTL toDateTime({t}) + INTERVAL {int(retention_days)} DAY"
               if self.name == "modern" else "")
        local = f"{table.name}_local" if cluster else table.name
        return (f"CREATE TABLE IF NOT EXISTS {database}.{local}{on_cluster} (\n  {cols}\n)"
                f"\nENGINE = {engine}\nPARTITION BY {partition}\nORDER BY ({order}){ttl}")

    def create_distributed(self, database: str, table: Table, cluster: str) -> str:
        """The cluster-wide table over ``<table>_local`` shards."""
        return (f"CREATE TABLE IF NOT EXISTS {database}.{table.name} ON CLUSTER {cluster} "
                f"AS {database}.{table.name}_local "
                f"ENGINE = Distributed({cluster}, {database}, {table.name}_local, rand())")

    @staticmethod
    def _is_time(table: Table, name: str) -> bool:
        return any(c.name == name and c.type == "time" for c in table.columns)

    def stored(self, time_col: str) -> str:
        """The physical column that holds a logical time column's nanoseconds (or the value)."""
        return time_col if self.name == "modern" else f"{time_col}_ns"

    # -- query expressions -----------------------------------------------------------------

    def time_ns(self, col: str) -> str:
        """An Int64 expression of a time column's nanoseconds since the epoch."""
        if self.name == "modern":
            return f"toUnixTimestamp64Nano({col})"
        return f"{col}_ns"

    def ns_to_time(self, ns: int) -> str:
        """A literal comparable with a time column (``WHERE ts >= ...``)."""
        if self.name == "modern":
            return f"fromUnixTimestamp64Nano(toInt64({int(ns)}), 'UTC')"
        return str(int(ns))

    def time_cmp(self, col: str) -> str:
        """The expression to compare against :meth:`ns_to_time` literals."""
        return col if self.name == "modern" else f"{col}_ns"


MODERN = Dialect("modern")
LEGACY = Dialect("legacy")
