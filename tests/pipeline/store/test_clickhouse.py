"""What only the ClickHouse-server store does: version detection, the legacy rendering's variants,
retention by dropping partitions, Distributed tables, and its errors."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from pipeline.config import ClickHouseSettings, StoreSettings
from pipeline.errors import StoreError
from pipeline.model import SampleBatch
from pipeline.store.base import open_store
from pipeline.store.clickhouse import ClickHouseStore, parse_version
from pipeline.store.dialect import LEGACY, Dialect, local_name
from pipeline.store.retention import drop_expired, expired_partitions, last_day
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.sql import floor_to, roll_sql
from pipeline.store.schema import ROLLUP_1M, SAMPLES, TABLES

NS = 1_000_000_000


def settings_for(address: tuple[str, int], database: str, **kw: Any) -> StoreSettings:
    ch = kw.pop("clickhouse", {})
    return StoreSettings(kind="clickhouse", database=database,
                         clickhouse=ClickHouseSettings(host=address[0], port=address[1], **ch),
                         **kw)


def test_the_store_detects_the_server_and_picks_its_dialect(clickhouse_store: Any) -> None:
    assert clickhouse_store.version >= (18, 16)
    if clickhouse_store.version < (20, 5):
        assert clickhouse_store.dialect == LEGACY
        ddl = "\n".join(clickhouse_store.ddl())
        assert "TTL" not in ddl and "CODEC" not in ddl and "DateTime64" not in ddl
        assert "ts_ns Int64" in ddl and "LowCardinality(String)" in ddl


def test_versions_pick_dialects() -> None:
    assert parse_version("18.16.1") == (18, 16, 1)
    assert parse_version("24.3.2.23") == (24, 3, 2, 23)
    assert parse_version("21.8.15.7-lts") == (21, 8, 15)
    from pipeline.store.dialect import dialect_for_version

    assert dialect_for_version((18, 16, 1)).name == "legacy"
    assert dialect_for_version((18, 16, 1), low_cardinality=False).low_cardinality is False
    assert dialect_for_version((20, 5)) == Dialect("modern", block_dedup=False)
    assert dialect_for_version((24, 3)) == Dialect("modern", block_dedup=True)


def test_legacy_with_plain_string_identifiers(clickhouse_address: tuple[str, int],
                                              unique_name: Any, batch: SampleBatch) -> None:
    settings = settings_for(clickhouse_address, unique_name("db"),
                            clickhouse={"legacy_low_cardinality": False})
    store = open_store(settings)
    try:
        if store.dialect.name != "legacy":
            pytest.skip("the server is modern: there is no legacy String variant to test")
        assert "LowCardinality" not in "\n".join(store.ddl())
        store.insert_samples(batch)
        store.insert_samples(batch)
        got = store.query(f"SELECT count() AS n, uniqExact(device) AS d "
                          f"FROM {store.database}.samples FINAL")
        assert int(got["n"][0]) == len(batch) and int(got["d"][0]) == len(batch.devices)
    finally:
        store.execute(f"DROP DATABASE IF EXISTS {store.database}")
        store.close()


def test_an_unreachable_server_is_a_store_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = StoreSettings(kind="clickhouse", clickhouse=ClickHouseSettings(
        port=port, connect_timeout_s=1))
    with pytest.raises(StoreError, match=f"127.0.0.1:{port}"):
        ClickHouseStore(settings)


def test_a_bad_statement_is_a_store_error_on_one_line(clickhouse_store: Any) -> None:
    with pytest.raises(StoreError) as err:
        clickhouse_store.query("SELECT no_such_column FROM system.one")
    assert "no_such_column" in str(err.value) and "\n" not in str(err.value)
    assert "Stack trace" not in str(err.value)


def test_partition_ids_give_their_last_day() -> None:
    assert last_day("20261130") == datetime(2026, 11, 30).date()
    assert last_day("202602") == datetime(2026, 2, 28).date()
    assert last_day("2026") is None and last_day("tuple()") is None


@pytest.fixture(params=["clickhouse", "clickhouse_cluster"])
def server_store(request: pytest.FixtureRequest) -> Any:
    """The ClickHouse server, then the cluster (its shards drop partitions ON CLUSTER)."""
    return request.getfixturevalue(f"{request.param}_store")


def test_retention_drops_only_expired_partitions(server_store: Any,
                                                 batch_factory: Any) -> None:
    store = server_store

    def stored(table: str) -> str:  # what holds the rows on each server
        return local_name(table, getattr(store, "cluster", ""))

    today = datetime.now(UTC).date()
    old_day = today - timedelta(days=store.settings.retention_days + 3)
    old_start = int(datetime(old_day.year, old_day.month, old_day.day, 12, tzinfo=UTC)
                    .timestamp()) * NS
    # four devices: on the cluster both shards hold some of each day
    old = batch_factory(devices=4, ports=1, seconds=30, start_ns=old_start)
    new = batch_factory(devices=4, ports=1, seconds=30)
    store.insert_samples(old)
    store.insert_samples(new)
    # the rollup job rolls the old day too (it may be late by up to the raw retention)
    RollupJob(store, store.settings.model_copy(update={"rollup_max_late_s": 30 * 86400})) \
        .run_once(event_ns=int(new.ts_ns.max()) + 3600 * NS)
    expired = expired_partitions(store, store.settings, today)
    assert (stored("samples"), old_day.strftime("%Y%m%d")) in expired
    assert (stored("samples_1m"), old_day.strftime("%Y%m%d")) not in expired  # kept 90 days
    assert (stored("rollup_marks"), old_day.strftime("%Y%m%d")) not in expired  # written today
    assert all(t != stored("samples") or p != today.strftime("%Y%m%d") for t, p in expired)
    if store.dialect.ttl:
        pytest.skip("the server has TTL: the retention job does not run there")
    assert drop_expired(store, store.settings, today) >= 1
    left = store.query(f"SELECT count() AS n, min(ts_ns) AS lo FROM {store.database}.samples")
    assert int(left["n"][0]) == len(new)
    assert int(left["lo"][0]) == int(new.ts_ns.min())
    rollup = store.query(f"SELECT sum(n) AS n FROM {store.database}.samples_1m FINAL "
                         f"WHERE bucket_ns < {int(new.ts_ns.min()) - 86400 * NS}")
    assert int(rollup["n"][0]) == len(old), "the rollup of the old day must outlive the samples"


def test_distributed_tables_over_a_cluster(clickhouse_store: Any, batch: SampleBatch,
                                          request: pytest.FixtureRequest) -> None:
    """The cluster rendering, minus replication (this server has no ZooKeeper): local shards, a
    Distributed table per table sharded by identity, rollups rolled through them."""
    store = clickhouse_store
    db, d = store.database + "_cluster", store.dialect
    statements = d.schema(db, 14, {"samples_1m": 90, "samples_1h": 730},
                          cluster="rocewatch_test", replicated=False)
    assert not any("ON CLUSTER" in s or "Replicated" in s for s in statements)
    for statement in statements:
        store.execute(statement)
    request.addfinalizer(lambda: store.execute(f"DROP DATABASE IF EXISTS {db}"))
    cols = ", ".join(d.insert_columns(SAMPLES))
    store._run(f"INSERT INTO {db}.samples ({cols}) VALUES",
               [batch.ts_ns, batch.device_names(), batch.port_names(), batch.metric_names(),
                batch.qual, batch.value, batch.flags],
               columnar=True, settings={"insert_distributed_sync": 1})
    lo = floor_to(int(batch.ts_ns.min()), ROLLUP_1M.bucket_ns)
    hi = floor_to(int(batch.ts_ns.max()), ROLLUP_1M.bucket_ns) + ROLLUP_1M.bucket_ns
    store.execute(roll_sql(d, db, ROLLUP_1M, lo, hi))
    local = store.query(f"SELECT count() AS n FROM {db}.samples_local FINAL")
    through = store.query(f"SELECT count() AS n FROM {db}.samples")
    rollup = store.query(f"SELECT sum(n) AS n FROM {db}.samples_1m_local FINAL")
    assert int(local["n"][0]) == int(through["n"][0]) == int(rollup["n"][0]) == len(batch)


def test_cluster_ddl_is_replicated_and_on_cluster() -> None:
    statements = LEGACY.schema("rw", 14, {"samples_1m": 90, "samples_1h": 730}, cluster="fabric")
    text = "\n".join(statements)
    assert statements[0] == "CREATE DATABASE IF NOT EXISTS rw ON CLUSTER fabric"
    for table in TABLES:
        assert (f"CREATE TABLE IF NOT EXISTS rw.{table.name}_local ON CLUSTER fabric" in text)
        assert (f"ENGINE = Distributed(fabric, rw, {table.name}_local, "
                f"cityHash64({table.shard_by}))") in text
    assert "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/rw.samples_local', " \
           "'{replica}')" in text
    assert "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/rw.samples_1m_local', " \
           "'{replica}', n)" in text
    assert "ReplicatedMergeTree('/clickhouse/tables/{shard}/rw.rollup_marks_local', " \
           "'{replica}')" in text
    assert "VIEW" not in text
    assert np.all([s.count("ON CLUSTER fabric") == 1 for s in statements])


def test_the_retention_job_runs_on_schedule_where_there_is_no_ttl(clickhouse_store: Any,
                                                                 chdb_store: Any) -> None:
    import time

    from pipeline.store.retention import RetentionJob

    assert not RetentionJob(chdb_store, chdb_store.settings).needed  # TTL does it there
    job = RetentionJob(clickhouse_store, clickhouse_store.settings)
    if not job.needed:
        pytest.skip("the server has TTL")
    job.start()  # runs at once, then every retention_check_s
    try:
        deadline = time.monotonic() + 20
        while job.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job.runs >= 1 and job.dropped == 0
    finally:
        job.stop()
