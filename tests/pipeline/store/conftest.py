"""The store tests run on every backend: chDB, the ClickHouse server, and the ClickHouse cluster
(2 shards x 2 replicas, read and written through its Distributed tables)."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.model import SampleBatch

#: the store fixtures of tests/conftest.py, by backend
BACKENDS = ("chdb", "clickhouse", "clickhouse_cluster")


@pytest.fixture
def batch(batch_factory: Any) -> SampleBatch:
    """Four devices: on the cluster, their rows land on both shards (leaf3 on the first)."""
    return batch_factory(devices=4)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Any:
    """Every store backend in turn, the cluster included: the same tests run on each."""
    return request.getfixturevalue(f"{request.param}_store")


def merge_parts(store: Any, table: str, cluster: Any = None) -> None:
    """Merge a table's parts now (``OPTIMIZE ... FINAL``), so its raw rows are what merges keep.
    On a cluster, on each shard's leader replica, where it holds parts: 18.16 fails an OPTIMIZE
    of an empty replicated table (``Unknown log entry type: 0``), also forwarded from another
    replica."""
    from clickhouse_driver import Client

    from pipeline.store.dialect import local_name

    name = getattr(store, "cluster", "")
    if not name:
        store.execute(f"OPTIMIZE TABLE {store.database}.{table} FINAL")
        return
    local = local_name(table, name)
    for node in cluster.nodes:
        client = Client(host=node.host, port=node.port)
        try:
            where = {"db": store.database, "t": local}
            leader = client.execute("SELECT is_leader FROM system.replicas WHERE database = "
                                    "%(db)s AND table = %(t)s", where)
            parts = client.execute("SELECT count() FROM system.parts WHERE active AND "
                                   "database = %(db)s AND table = %(t)s", where)
            if leader and leader[0][0] and parts[0][0]:
                client.execute(f"OPTIMIZE TABLE {store.database}.{local} FINAL")
        finally:
            client.disconnect()


@pytest.fixture
def merge(request: pytest.FixtureRequest) -> Any:
    """``merge(store, table)``: :func:`merge_parts` on whichever backend ``store`` is."""
    def run(store: Any, table: str) -> None:
        cluster = request.getfixturevalue("clickhouse_cluster") if getattr(
            store, "cluster", "") else None
        merge_parts(store, table, cluster)

    return run
