"""Fixtures of the cluster tests: the test ZooKeeper, and a deployment of role processes on the
Kafka cluster, the test ClickHouse database and that ZooKeeper (tests/cluster/roles.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.roles import SESSION_TIMEOUT_S, Deployment
from tests.conftest import need_service


@pytest.fixture(scope="session")
def zookeeper_address() -> str:
    host, port = need_service("ROCEWATCH_TEST_ZOOKEEPER", "ZooKeeper")
    return f"{host}:{port}"


@pytest.fixture
def roles(tmp_path: Path, kafka_cluster: Any, clickhouse_store: Any, zookeeper_address: str,
          unique_name: Any) -> Iterator[Deployment]:
    """Role processes on the Kafka cluster (6 partitions, replication 3), the test database,
    and ZooKeeper under a root of their own; every process is stopped at the end."""
    ch = clickhouse_store.settings.clickhouse
    config = {
        "site": "lab",
        "bus": {"kind": "kafka", "topic_prefix": unique_name("rw") + ".",
                "kafka": {"bootstrap": ",".join(n.address for n in kafka_cluster.nodes),
                          "partitions": 6, "replication": 3, "linger_ms": 5,
                          "group_prefix": unique_name("g") + "-", "session_timeout_ms": 6000,
                          "heartbeat_interval_ms": 500, "bootstrap_timeout_ms": 20_000}},
        "store": {"kind": "clickhouse", "database": clickhouse_store.database,
                  "rollup_every_s": 0.5, "clickhouse": {"host": ch.host, "port": ch.port}},
        "coordination": {"zookeeper": zookeeper_address, "root": "/" + unique_name("t"),
                         "session_timeout_s": SESSION_TIMEOUT_S},
    }
    deployment = Deployment(tmp_path, config, clickhouse_store)
    yield deployment
    deployment.stop()
