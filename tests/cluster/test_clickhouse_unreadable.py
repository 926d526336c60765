"""What the store says is out of sight on the ClickHouse cluster (2 shards x 2 replicas,
18.16): a write a Distributed read does not see, whichever replica of its shard the read goes
to (the rollup job rolls again the minutes it rolled meanwhile), and nothing else (a second
replica's fetch of a part the first one serves hides nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from clickhouse_driver import Client

from pipeline.model import SampleBatch
from pipeline.store.base import Store, open_store
from pipeline.store.dialect import local_name
from pipeline.store.replicas import Server, read_replicas
from tests.cluster.known_set import polls, stored_count, wait_for
from tests.conftest import cluster_store_settings, need_control

pytestmark = [pytest.mark.integration]


def on_node(cluster: Any, name: str, sql: str) -> Any:
    node = cluster.node(name)
    client = Client(host=node.host, port=node.port)
    try:
        return client.execute(sql)
    finally:
        client.disconnect()


@contextmanager
def fetches_stopped(cluster: Any, database: str, nodes: list[str]) -> Iterator[None]:
    """SYSTEM STOP FETCHES of the samples' shard table on ``nodes``, started again after."""
    table = f"{database}.{local_name('samples', cluster.name)}"
    for name in nodes:
        on_node(cluster, name, f"SYSTEM STOP FETCHES {table}")
    try:
        yield
    finally:
        for name in nodes:
            on_node(cluster, name, f"SYSTEM START FETCHES {table}")


def writer(cluster: Any, database: str, name: str) -> Store:
    """A store on one server: its writes of that server's shard go to the server itself."""
    node = cluster.node(name)
    settings = cluster_store_settings(cluster, database)
    ch = settings.clickhouse.model_copy(update={"host": node.host, "port": node.port,
                                                "alt_hosts": []})
    return open_store(settings.model_copy(update={"clickhouse": ch}))


def write(store: Store, batches: list[SampleBatch]) -> int:
    for batch in batches:
        store.insert_samples(batch)
    return sum(len(b) for b in batches)


def delay(cluster: Any, database: str, name: str) -> int:
    table = local_name("samples", cluster.name)
    rows = on_node(cluster, name, f"SELECT absolute_delay FROM system.replicas WHERE "
                                  f"database = '{database}' AND table = '{table}'")
    return int(rows[0][0])


def queued(cluster: Any, database: str, name: str) -> int:
    """Entries in the replica's replication queue, for the database."""
    return int(on_node(cluster, name, f"SELECT count() FROM system.replication_queue "
                                      f"WHERE database = '{database}'")[0][0])


def test_a_write_is_unreadable_exactly_while_the_replica_reads_go_to_lacks_it(
        clickhouse_cluster: Any, clickhouse_cluster_store: Any) -> None:
    cluster, store = clickhouse_cluster, clickhouse_cluster_store
    need_control(cluster)
    db = store.database
    first, second = writer(cluster, db, "s2r1"), writer(cluster, db, "s2r2")
    rounds = iter(polls(devices=12, rounds=3))
    try:
        # every replica current, the second ones not fetching: reads go to the first replicas,
        # which took the writes: nothing is out of sight, whatever the second ones still fetch
        with fetches_stopped(cluster, db, ["s1r2", "s2r2"]):
            wrote = write(store, [next(rounds) for _ in range(12)])
            assert stored_count(store) == wrote
            assert store.unreadable_since() is None
        wait_for(lambda: all(queued(cluster, db, n) == 0 for n in ("s1r2", "s2r2")), 60,
                 "the second replicas to fetch what they missed")
        # s2r1 falls behind (s2r2 took a part it may not fetch): reads of shard 2 go to s2r2;
        # then s2r1 takes a write s2r2 may not fetch: out of sight, and said so
        with fetches_stopped(cluster, db, ["s2r1", "s2r2"]):
            wrote += write(second, [next(rounds) for _ in range(12)])
            wait_for(lambda: delay(cluster, db, "s2r1") > 3, 30, "s2r1 to lag")
            shown = stored_count(store)
            local = f"{db}.{local_name('samples', cluster.name)}"
            shard2 = {str(d) for (d,) in on_node(cluster, "s2r1",
                                                 f"SELECT DISTINCT device FROM {local}")}
            hidden = write(first, [b for b in (next(rounds) for _ in range(12))
                                   if b.devices[b.device[0]] in shard2])
            assert stored_count(store) == shown == wrote  # s2r1's write is not read
            since = store.unreadable_since()
            assert since is not None, "a write the replica reads go to lacks is unreadable"
            now_s = int(store.query("SELECT toUInt64(now()) AS now")["now"][0])
            assert now_s - 60 <= since <= now_s
        wait_for(lambda: store.unreadable_since() is None, 60, "the fetches to complete")
        assert stored_count(store) == wrote + hidden
    finally:
        first.close()
        second.close()


def test_reads_go_to_the_first_replica_in_order_within_the_delay_else_the_least_behind() -> None:
    servers = [Server("a:1", 1, 1), Server("b:1", 1, 2), Server("c:1", 2, 1),
               Server("d:1", 2, 2)]
    every = {(0, "t"): 0.0, (1, "t"): 0.0, (2, "t"): 0.0, (3, "t"): 0.0}
    assert read_replicas(every, servers, 2) == {(0, "t"), (2, "t")}
    # shard 1's first replica lags, shard 2's first is down (it does not answer)
    lagging = {(0, "t"): 30.0, (1, "t"): 1.0, (3, "t"): 5.0}
    assert read_replicas(lagging, servers, 2) == {(1, "t"), (3, "t")}
    # both of shard 1's lag: the one least behind
    both = {(0, "t"): 30.0, (1, "t"): 9.0, (0, "u"): 0.0, (1, "u"): 0.0}
    assert read_replicas(both, servers, 2) == {(1, "t"), (0, "u")}
