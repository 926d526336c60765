"""The schema's rendering per engine, and the time expressions every query goes through.

* ``modern`` (chDB, ClickHouse >= 20.5): ``DateTime64(9)``, ``LowCardinality``, codecs, TTL, and
  block-level insert deduplication on plain MergeTree tables;
* ``legacy`` (ClickHouse 18.16 up to 20.4): event time as ``Int64`` nanoseconds (``<col>_ns``) plus,
  for the partitioning column, a ``DateTime`` computed from it; identifiers as
  ``LowCardinality(String)`` under 18.16's experimental setting (or plain ``String``), no codecs,
  no TTL (retention drops whole partitions from a scheduled job: :mod:`pipeline.store.retention`).

Every query goes through a dialect's expressions (:meth:`Dialect.time_ns`,
:meth:`Dialect.ns_to_time`, :meth:`Dialect.time_cmp`, :meth:`Dialect.time_range`) so it gives the
same answer on every backend. The tables it renders are :mod:`pipeline.store.schema`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.store.schema import ROLLUPS, Column, Rollup, Table, stored_tables


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
        local = local_name(table.name, cluster)
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
        local = local_name(name, cluster)
        return (f"CREATE TABLE IF NOT EXISTS {database}.{name}{on_cluster} "
                f"AS {database}.{local} "
                f"ENGINE = Distributed({cluster}, {database}, {local}, "
                f"cityHash64({shard_by}))")

    def schema(self, database: str, retention_days: int, rollup_retention_days: dict[str, int],
               cluster: str = "", replicated: bool | None = None,
               rollups: tuple[Rollup, ...] | None = None) -> list[str]:
        """Every statement that creates the whole store, in order (``rollups``: which of
        :data:`ROLLUPS` to keep, with the rollup job's bookkeeping; all by default)."""
        replicated = bool(cluster) if replicated is None else replicated
        kept = ROLLUPS if rollups is None else rollups
        on_cluster = f" ON CLUSTER {cluster}" if cluster and replicated else ""
        tables = stored_tables(kept)
        out = [f"CREATE DATABASE IF NOT EXISTS {database}{on_cluster}"]
        out += [self.create_table(database, t,
                                  rollup_retention_days.get(t.name, retention_days), cluster,
                                  replicated) for t in tables]
        if cluster:
            out += [self.create_distributed(database, t.name, t.shard_by, cluster, replicated)
                    for t in tables]
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

    def time_at_least(self, col: str, ns_sql: str) -> list[str]:
        """Conditions ``col >= ns_sql`` on a partitioning time column, where ``ns_sql`` is an
        Int64 SQL expression of ns (a scalar subquery: a view's bound), spelled like
        :meth:`time_range` so the engine can skip the parts before it."""
        bound = f"greatest({ns_sql}, toInt64(0))"
        if self.name == "modern":
            return [f"{col} >= fromUnixTimestamp64Nano({bound}, 'UTC')"]
        return [f"{col}_ns >= {ns_sql}",
                f"{col} >= toDateTime(intDiv({bound}, 1000000000), 'UTC')"]


def local_name(table: str, cluster: str = "") -> str:
    """The table that holds a logical table's rows on each server: ``<table>_local`` on a
    cluster (the logical name is the ``Distributed`` table over them), else the table itself."""
    return f"{table}_local" if cluster else table


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
