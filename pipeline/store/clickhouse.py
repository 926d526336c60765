"""The store on a ClickHouse server (any version from 18.16 on), over the native protocol.

The store asks the server its version, picks the :class:`~pipeline.store.dialect.Dialect` it speaks
and
renders the one logical schema for it (cluster DDL when ``clickhouse.cluster`` is set). Inserts are
columnar: numpy arrays straight from the batch (identifier columns are expanded from the batch's
vocabularies with one numpy take each), followed by the batch's marks for the rollup job
(:mod:`pipeline.store.rollup.sql`); query results come back as columns shaped like
:meth:`pipeline.store.chdb.ChdbStore.query`'s (integers and floats as numpy arrays, times as int64
in their unit, strings and arrays as object arrays).

clickhouse-driver's ``Client`` is not thread-safe: each thread gets a connection of its own, which
fails over to ``clickhouse.alt_hosts`` in turn when its server stops answering (the statement that
failed raises :class:`~pipeline.errors.StoreError`; the next one runs on the next server that
answers).

On a cluster (``clickhouse.cluster``) every statement goes to one server, which forwards it through
the ``Distributed`` tables: inserts with ``insert_distributed_sync`` (they return once every shard
has its rows), reads and writes of a shard to the same replica (``load_balancing = 'in_order'``,
this server for its own shard), so a read sees what was just written before replication copies
it, except from a replica that lags (back from an outage, still fetching): reads avoid it until it
caught up; the rollup job's marks without the replicated tables' block deduplication (the job counts
them). The cluster DDL (``ON CLUSTER``) waits for every server, so :meth:`migrate` runs it
only while this server lacks part of the schema: a process that starts while a server of the
cluster is down does not wait for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from clickhouse_driver import Client
from clickhouse_driver.errors import Error as DriverError
from numpy.typing import NDArray

from pipeline.config import StoreSettings
from pipeline.errors import StoreError
from pipeline.metrics import CATALOG
from pipeline.model import ActionResult, Alert, SampleBatch
from pipeline.store.base import (
    Columns,
    action_columns,
    alert_columns,
    kept_rollups,
    literal,
)
from pipeline.store.ddl import store_ddl, view_names
from pipeline.store.dialect import Dialect, dialect_for_version, local_name
from pipeline.store.neighbors import neighbor_columns
from pipeline.store.replicas import Server, cluster_servers, unread_since
from pipeline.store.rollup.sql import bucket_marks, marks_insert
from pipeline.store.rollup.upgrade import finish_upgrade, prepare_upgrade
from pipeline.store.schema import (
    ACTIONS,
    ALERTS,
    NEIGHBORS,
    ROLLUP_MARKS,
    SAMPLES,
    Table,
    stored_tables,
)
from pipeline.topology.neighbors import NeighborChange

log = logging.getLogger("rocewatch.store")

#: seconds an ON CLUSTER statement waits for every server of the cluster before it fails
CLUSTER_DDL_TIMEOUT_S = 60
#: a replica further behind than this (seconds since the oldest part it has still to fetch was
#: written) is read only when no other replica of its shard is closer
REPLICA_MAX_DELAY_S = 2
#: how long a write may stay out of sight of a cluster's reads with every server up: a read
#: avoids a replica that lags by more than REPLICA_MAX_DELAY_S while the one it reads fetches
#: the newest parts (:attr:`pipeline.store.base.Store.read_lag_s`)
CLUSTER_READ_LAG_S = 10

_METRIC_NAMES: NDArray[np.object_] = np.asarray([m.name for m in CATALOG], dtype=object)

_EMPTY_DTYPES: dict[str, type[np.generic]] = {
    "Int8": np.int8, "Int16": np.int16, "Int32": np.int32, "Int64": np.int64,
    "UInt8": np.uint8, "UInt16": np.uint16, "UInt32": np.uint32, "UInt64": np.uint64,
    "Float32": np.float32, "Float64": np.float64, "DateTime": np.int64, "Date": np.int64,
}


def parse_version(text: str) -> tuple[int, ...]:
    """``'18.16.1'`` → ``(18, 16, 1)``; parts that are not numbers are dropped."""
    parts = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


class ClickHouseStore:
    """A :class:`pipeline.store.base.Store` on a ClickHouse server."""

    def __init__(self, settings: StoreSettings) -> None:
        self.settings = settings
        self.database = settings.database
        self.cluster = settings.clickhouse.cluster
        self.read_lag_s = float(CLUSTER_READ_LAG_S if self.cluster else 0)
        self._local = threading.local()
        self._clients: list[Any] = []
        self._clients_lock = threading.Lock()
        self._query_settings: dict[str, Any] = {}
        #: the cluster's servers (read from the server once)
        self._servers: list[Server] | None = None
        raw = self._run("SELECT version()", columnar=True)[0][0]
        self.server_version = str(raw)
        self.version = parse_version(self.server_version)
        self.dialect: Dialect = dialect_for_version(
            self.version, settings.clickhouse.legacy_low_cardinality)
        self._query_settings = dict(self.dialect.settings)
        if self.cluster:
            # an insert returns once every shard has its rows: the commit after it is honest
            self._query_settings["insert_distributed_sync"] = 1
            # reads and writes of a shard go to the same replica (this server for its own
            # shard, else the first that answers): a read sees what was just written, before
            # replication copies it to the other replicas ...
            self._query_settings["load_balancing"] = "in_order"
            # ... unless that replica lags (it came back from an outage and is still fetching
            # what the others took meanwhile): then reads go to one that does not
            self._query_settings["max_replica_delay_for_distributed_queries"] = \
                REPLICA_MAX_DELAY_S
            # ON CLUSTER DDL waits for every server: bounded (a server that is down takes it
            # from the cluster's queue when it returns)
            self._query_settings["distributed_ddl_task_timeout"] = CLUSTER_DDL_TIMEOUT_S
        log.info("ClickHouse %s at %s:%d: %s dialect", self.server_version,
                 settings.clickhouse.host, settings.clickhouse.port, self.dialect.name)

    # -- connections --------------------------------------------------------------------------

    def _client(self) -> Any:
        client = getattr(self._local, "client", None)
        if client is None:
            ch = self.settings.clickhouse
            failover = {"alt_hosts": ",".join(ch.alt_hosts)} if ch.alt_hosts else {}
            client = Client(
                host=ch.host, port=ch.port, user=ch.user, password=ch.password.get_secret_value(),
                secure=ch.secure, database="default", **failover,
                compression=False if ch.compression == "none" else ch.compression,
                connect_timeout=ch.connect_timeout_s,
                send_receive_timeout=ch.send_receive_timeout_s,
                client_name="rocewatch", settings={"use_numpy": True},
            )
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def _run(self, sql: str, data: Any = None, columnar: bool = False,
             with_column_types: bool = False, settings: dict[str, Any] | None = None) -> Any:
        merged = {**self._query_settings, **(settings or {})}
        try:
            return self._client().execute(sql, data, columnar=columnar,
                                           with_column_types=with_column_types,
                                           settings=merged or None)
        except (DriverError, OSError, EOFError) as exc:
            ch = self.settings.clickhouse
            raise StoreError(f"ClickHouse at {ch.host}:{ch.port}: {_message(exc)}") from exc

    # -- the Store interface ------------------------------------------------------------------

    @property
    def samples_table(self) -> str:
        return f"{self.database}.{SAMPLES.name}"

    def ddl(self) -> list[str]:
        """The statements :meth:`migrate` runs, for this server and configuration."""
        return store_ddl(self.dialect, self.settings, self.cluster)

    def migrate(self) -> None:
        if self.cluster and self._has_schema():
            log.info("%s: the schema is on this server already: no cluster DDL", self.database)
            return
        upgrade = prepare_upgrade(self, kept_rollups(self.settings))
        for statement in self.ddl():
            self._run(statement)
        finish_upgrade(self, upgrade)

    def _has_schema(self) -> bool:
        """Every table (local and distributed) and view of the schema exists on this
        server."""
        tables = self._run(f"SELECT name FROM system.tables WHERE database = "
                           f"{literal(self.database)}", columnar=True)
        have = {str(n) for n in tables[0]} if tables else set()
        names = [t.name for t in stored_tables(kept_rollups(self.settings))]
        return {*names, *(local_name(n, self.cluster) for n in names), *view_names()} <= have

    def execute(self, sql: str) -> None:
        self._run(sql)

    def unreadable_since(self) -> int | None:
        """On a cluster: when the oldest part was written that a replica reads go to has still
        to fetch from the replica that took it (:mod:`pipeline.store.replicas`: the second
        replica of a shard while the first lags after an outage, a part the first took since
        is out of sight there). A replica's own parts are in its queue for a moment too, and do
        not count."""
        if not self.cluster:
            return None
        if self._servers is None:
            self._servers = cluster_servers(self._run, self.cluster)
        return unread_since(lambda sql: self._run(sql, settings={"skip_unavailable_shards": 1}),
                            self._servers, self.database, REPLICA_MAX_DELAY_S)

    def query(self, sql: str) -> Columns:
        data, types = self._run(sql, columnar=True, with_column_types=True)
        if not data:
            return {name: _empty(type_) for name, type_ in types}
        return {name: _column(col) for (name, _), col in zip(types, data, strict=True)}

    def insert_samples(self, batch: SampleBatch, event_ns: int | None = None) -> int:
        n = len(batch)
        if not n:
            return 0
        ts: NDArray[Any] = batch.ts_ns
        if self.dialect.name == "modern":
            ts = batch.ts_ns.view("datetime64[ns]")
        columns = [
            ts,
            np.asarray(batch.devices, dtype=object)[batch.device],
            np.asarray(batch.ports, dtype=object)[batch.port],
            _METRIC_NAMES[batch.metric],
            batch.qual, batch.value, batch.flags,
        ]
        self._insert(SAMPLES, columns)
        marks = bucket_marks(batch, event_ns) if self.settings.rollups else None
        if marks is not None:  # after the samples: a mark stands for rows already stored
            self._insert(ROLLUP_MARKS, [np.asarray(marks.buckets, np.int64),
                                        np.full(len(marks.buckets), marks.event_ns, np.int64)],
                         sql=marks_insert(self.dialect, self.database))
        return n

    def _insert(self, table: Table, columns: list[Any], numpy: bool = True,
                sql: str = "") -> None:
        names = ", ".join(self.dialect.insert_columns(table))
        sql = sql or f"INSERT INTO {self.database}.{table.name} ({names}) VALUES"
        settings: dict[str, Any] = {} if numpy else {"use_numpy": False}
        if self.cluster and not table.dedup_blocks:
            # replicated tables drop a block identical to a recent one: these rows all count
            settings["insert_deduplicate"] = 0
        self._run(sql, columns, columnar=True, settings=settings)

    def _insert_logical(self, table: Table, columns: dict[str, list[Any]]) -> None:
        out: list[Any] = []
        for col in table.columns:
            values = columns[col.name]
            if col.type == "time" and self.dialect.name == "modern":
                values = [datetime.fromtimestamp(v / 1e9, UTC) for v in values]
            out.append(values)
        self._insert(table, out, numpy=False)

    def insert_alerts(self, alerts: Sequence[Alert]) -> None:
        if alerts:
            self._insert_logical(ALERTS, alert_columns(alerts))

    def insert_actions(self, actions: Sequence[ActionResult]) -> None:
        if actions:
            self._insert_logical(ACTIONS, action_columns(actions))

    def insert_neighbors(self, changes: Sequence[NeighborChange]) -> None:
        if changes:
            self._insert_logical(NEIGHBORS, neighbor_columns(changes))

    def close(self) -> None:
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            try:
                client.disconnect()
            except Exception as exc:  # closing must not fail: say what happened and go on
                log.debug("closing a ClickHouse connection: %s", exc)


def _message(exc: BaseException) -> str:
    """The server's message without its stack trace, on one line."""
    text = str(exc).split("Stack trace:")[0]
    return " ".join(text.split()) or type(exc).__name__


def _column(col: Any) -> NDArray[Any]:
    """One result column in the shape ChdbStore.query returns."""
    if isinstance(col, np.ndarray):
        if col.dtype.kind == "M":
            return col.view(np.int64)
        if col.dtype.kind in "US":
            return col.astype(object)
        if col.dtype == object and len(col) and isinstance(col[0], (tuple, np.ndarray)):
            return _objects([list(v) for v in col])
        return col
    if isinstance(col, pd.Categorical):
        return np.asarray(col, dtype=object)
    return _objects([list(v) if isinstance(v, (tuple, np.ndarray)) else v for v in col])


def _objects(values: list[Any]) -> NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # element-wise: equal-length lists must not become 2-D
        out[i] = v
    return out


def _empty(type_: str) -> NDArray[Any]:
    base = type_.removeprefix("LowCardinality(").removesuffix(")")
    base = base.split("(")[0]
    return np.empty(0, dtype=_EMPTY_DTYPES.get(base, object))
