"""The embedded store: chDB (ClickHouse's engine in-process) on a local data directory.

chDB allows one process per data directory and one directory per process, so this store is owned
by the process that runs ingest and the API; everything else reads through the API. Inserts hand
chDB an Arrow table whose string columns are dictionary arrays built straight from the batch's
vocabularies (no per-row strings are made in Python), as an Arrow stream under a plain ``INSERT``
(the engine reads it without calling back into Python), then mark the batch's minute buckets for
the rollup job (:mod:`pipeline.store.rollup.sql`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from pipeline.config import StoreSettings
from pipeline.errors import StoreError
from pipeline.metrics import CATALOG
from pipeline.model import ActionResult, Alert, SampleBatch
from pipeline.store.base import (
    Columns,
    action_columns,
    alert_columns,
    batch_token,
    kept_rollups,
)
from pipeline.store.ddl import store_ddl
from pipeline.store.dialect import MODERN
from pipeline.store.neighbors import neighbor_columns
from pipeline.store.rollup.sql import bucket_marks, marks_insert, marks_values
from pipeline.store.rollup.upgrade import finish_upgrade, prepare_upgrade
from pipeline.store.schema import ACTIONS, ALERTS, NEIGHBORS, Table
from pipeline.topology.neighbors import NeighborChange

_METRIC_NAMES = pa.array([m.name for m in CATALOG])
_TS = pa.timestamp("ns", tz="UTC")


class ChdbStore:
    """A :class:`pipeline.store.base.Store` on chDB."""

    dialect = MODERN
    read_lag_s = 0.0

    def __init__(self, settings: StoreSettings) -> None:
        import chdb

        self.settings = settings
        self.database = settings.database
        self.retention_days = settings.retention_days
        path = Path(settings.chdb_path)
        path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn: Any = chdb.connect(str(path))  # type: ignore[no-untyped-call]
        except RuntimeError as exc:
            raise StoreError(f"cannot open the chDB store at {path} (is another rocewatch "
                             f"process using it?): {exc}") from exc

    def _run(self, sql: str, fmt: str = "CSV") -> Any:
        try:
            with self._lock:
                return self._conn.query(sql, fmt)
        except RuntimeError as exc:
            raise StoreError(f"chDB: {exc}".strip()) from exc

    def ddl(self) -> list[str]:
        """The statements :meth:`migrate` runs."""
        return store_ddl(self.dialect, self.settings)

    def migrate(self) -> None:
        upgrade = prepare_upgrade(self, kept_rollups(self.settings))
        for statement in self.ddl():
            self.execute(statement)
        finish_upgrade(self, upgrade)

    def execute(self, sql: str) -> None:
        self._run(sql)

    def unreadable_since(self) -> int | None:
        return None  # one engine in this process: a read sees every write before it

    def query(self, sql: str) -> Columns:
        result = self._run(sql, "ArrowTable")
        return {name: _to_numpy(result.column(name)) for name in result.column_names}

    def insert_samples(self, batch: SampleBatch, event_ns: int | None = None) -> int:
        if not len(batch):
            return 0
        rows = pa.table({
            "ts": pa.array(batch.ts_ns, type=pa.int64()).cast(_TS),
            "device": pa.DictionaryArray.from_arrays(batch.device, pa.array(batch.devices)),
            "port": pa.DictionaryArray.from_arrays(batch.port, pa.array(batch.ports)),
            "metric": pa.DictionaryArray.from_arrays(batch.metric.astype(np.int32),
                                                     _METRIC_NAMES),
            "qual": batch.qual, "value": batch.value, "flags": batch.flags,
        })
        # a retry or redelivery of the same batch is dropped by its content hash
        self._insert_arrow("samples", rows, token=batch_token(batch))
        marks = bucket_marks(batch, event_ns) if self.settings.rollups else None
        if marks is not None:  # after the samples: a mark stands for rows already stored
            self.execute(f"{marks_insert(self.dialect, self.database)} {marks_values(marks)}")
        return len(batch)

    def _insert_arrow(self, table: str, rows: pa.Table, token: str = "") -> None:
        # A plain INSERT fed the table as an Arrow stream: the engine reads the columns (the
        # dictionaries straight into LowCardinality) without calling back into Python, as
        # ``INSERT ... SELECT FROM Python(...)`` does; and, being an INSERT of data, it is
        # deduplicated like one (by the token when given, else by the block's content).
        cols = ", ".join(rows.column_names)
        settings = f" SETTINGS insert_deduplication_token = '{token}'" if token else ""
        data = _arrow_stream(rows)
        try:
            with self._lock, self._conn.send_insert(
                    f"INSERT INTO {self.database}.{table} ({cols}){settings}",
                    "ArrowStream") as inserter:
                inserter.append(data)
                inserter.finish()
        except RuntimeError as exc:
            raise StoreError(f"chDB insert into {table}: {exc}".strip()) from exc

    def _insert_logical(self, table: Table, columns: dict[str, list[Any]]) -> None:
        arrays = {}
        for col in table.columns:
            values = columns[col.name]
            if col.type == "time":
                arrays[col.name] = pa.array(values, type=pa.int64()).cast(_TS)
            elif col.type == "strings":
                arrays[col.name] = pa.array(values, type=pa.list_(pa.string()))
            else:
                arrays[col.name] = pa.array(values)
        self._insert_arrow(table.name, pa.table(arrays))

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
        with self._lock:
            self._conn.close()


def _arrow_stream(rows: pa.Table) -> bytes:
    """A table in the Arrow IPC stream format (what ``FORMAT ArrowStream`` reads)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _to_numpy(column: pa.ChunkedArray) -> np.ndarray[Any, Any]:
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or \
            pa.types.is_list(column.type):
        values = column.to_pylist()
        out = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):  # element-wise: equal-length lists must not become 2-D
            out[i] = v
        return out
    array: np.ndarray[Any, Any] = column.to_numpy()
    return array
