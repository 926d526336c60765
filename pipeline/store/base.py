"""The store: its interface, the row shapes it shares across backends, and how to open one.

Backends: :class:`pipeline.store.chdb.ChdbStore` (the embedded default: ClickHouse's engine
in-process, one owning process per data directory) and
:class:`pipeline.store.clickhouse.ClickHouseStore` (a ClickHouse server over the native protocol,
any version from 18.16 on). Both render :mod:`pipeline.store.schema` for their capabilities and
return
query results as columns (``dict`` of numpy arrays).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from pipeline.config import StoreSettings
from pipeline.errors import QueryError
from pipeline.model import ActionResult, Alert, SampleBatch
from pipeline.store.dialect import Dialect
from pipeline.store.schema import ROLLUP_1H, ROLLUP_1M, ROLLUPS, Rollup
from pipeline.topology.neighbors import NeighborChange

Columns = dict[str, NDArray[Any]]


class Store(Protocol):
    dialect: Dialect
    database: str
    settings: StoreSettings
    #: how long (s) a write may stay out of sight of reads while every server runs: 0 when a
    #: read sees every write before it; on a cluster about the replication lag (a read avoids
    #: a replica that is catching up, and the other may not have fetched the newest part yet)
    read_lag_s: float

    def migrate(self) -> None:
        """Create the database, tables and rollups if they are missing (and upgrade a store
        whose rollups were materialised views: :mod:`pipeline.store.rollup.upgrade`)."""

    def ddl(self) -> list[str]:
        """The statements :meth:`migrate` runs."""

    def insert_samples(self, batch: SampleBatch, event_ns: int | None = None) -> int:
        """Insert a batch; safe to repeat (duplicates collapse). With rollups kept, then mark
        the minute buckets it touched for the rollup job
        (:func:`pipeline.store.rollup.sql.bucket_marks`)
        with the event time the data has reached: ``event_ns`` when the writer knows it (the
        ingest consumer's watermark over its partitions), else the batch's newest sample.
        Returns rows written."""

    def insert_alerts(self, alerts: Sequence[Alert]) -> None: ...

    def insert_actions(self, actions: Sequence[ActionResult]) -> None: ...

    def insert_neighbors(self, changes: Sequence[NeighborChange]) -> None:
        """Record LLDP neighbour changes (:mod:`pipeline.store.neighbors`); safe to repeat."""

    def query(self, sql: str) -> Columns:
        """Run a SELECT; the result as columns."""

    def execute(self, sql: str) -> None:
        """Run a statement with no result (DDL, ALTER)."""

    def unreadable_since(self) -> int | None:
        """When (server clock, Unix seconds) the oldest write that reads do not see yet was
        made; None when reads see every write (always, on one server). On a cluster, a part a
        replica took just before it died waits there until it returns."""

    def close(self) -> None: ...


def literal(value: object) -> str:
    """A SQL literal for a value: the one place values are spelled into SQL."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise QueryError(f"not a finite number: {value}")
        return repr(float(value))
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise QueryError(f"cannot spell {type(value).__name__} as SQL")


def alert_columns(alerts: Sequence[Alert]) -> dict[str, list[Any]]:
    """Alerts as the ``alerts`` table's logical columns (times in ns)."""
    return {
        "updated": [a.updated_ns for a in alerts],
        "fingerprint": [a.fingerprint for a in alerts],
        "name": [a.name for a in alerts],
        "entity": [a.entity for a in alerts],
        "severity": [a.severity.value for a in alerts],
        "status": ["firing" if a.firing else "resolved" for a in alerts],
        "starts": [a.starts_ns for a in alerts],
        "ends": [a.ends_ns or 0 for a in alerts],
        "root_cause": [int(a.root_cause) for a in alerts],
        "confidence": [float(a.confidence) for a in alerts],
        "ports": [list(a.ports) for a in alerts],
        "explains": [list(a.explains) for a in alerts],
        "inhibited_by": [a.inhibited_by or "" for a in alerts],
        "source": [a.source for a in alerts],
        "labels": [json.dumps(a.labels, sort_keys=True) for a in alerts],
        "annotations": [json.dumps(a.annotations, sort_keys=True) for a in alerts],
        "evidence": [json.dumps(a.evidence, sort_keys=True) for a in alerts],
    }


def action_columns(actions: Sequence[ActionResult]) -> dict[str, list[Any]]:
    """Action results as the ``actions`` table's logical columns (times in ns)."""
    return {
        "at": [a.at_ns for a in actions],
        "id": [a.id for a in actions],
        "action": [a.action for a in actions],
        "target": [a.target for a in actions],
        "alert_fingerprint": [a.alert_fingerprint for a in actions],
        "alert_name": [a.alert_name for a in actions],
        "mode": [a.mode for a in actions],
        "outcome": [a.outcome for a in actions],
        "detail": [a.detail for a in actions],
        "steps": [json.dumps(list(a.steps), sort_keys=True) for a in actions],
    }


def batch_token(batch: SampleBatch) -> str:
    """A content hash of a batch: the identity under which an engine with insert deduplication
    tokens drops a repeated insert of the same batch (a retry after an outage, a redelivery)."""
    h = hashlib.blake2b(digest_size=16)
    h.update("\0".join(batch.devices).encode())
    h.update(b"\1")
    h.update("\0".join(batch.ports).encode())
    for col in (batch.ts_ns, batch.device, batch.port, batch.metric, batch.qual, batch.value,
                batch.flags):
        h.update(np.ascontiguousarray(col).data)
    return h.hexdigest()


def rollup_retention(settings: StoreSettings) -> dict[str, int]:
    """Days each rollup table keeps, by table name."""
    return {ROLLUP_1M.name: settings.rollup_1m_days, ROLLUP_1H.name: settings.rollup_1h_days}


def kept_rollups(settings: StoreSettings) -> tuple[Rollup, ...]:
    """The rollups a store keeps (none when ``store.rollups`` is off)."""
    return ROLLUPS if settings.rollups else ()


def open_store(settings: StoreSettings) -> Store:
    """Open the configured backend (imports it lazily) and apply the schema."""
    store: Store
    if settings.kind == "chdb":
        from pipeline.store.chdb import ChdbStore

        store = ChdbStore(settings)
    else:
        from pipeline.store.clickhouse import ClickHouseStore

        store = ClickHouseStore(settings)
    store.migrate()
    return store
