"""Shared fixtures. Each section belongs to one area; keep additions in a section of their own."""

from __future__ import annotations

# --- services ---
# The real services the tests run against: an Apache Kafka broker and a ClickHouse server, a
# 3-broker Kafka cluster and a 2 x 2 ClickHouse cluster (with its ZooKeeper), all started on
# loopback by tests/services/run-tests.sh, which exports their addresses as ROCEWATCH_TEST_KAFKA,
# ROCEWATCH_TEST_CLICKHOUSE (host:port), ROCEWATCH_TEST_KAFKA_CLUSTER and
# ROCEWATCH_TEST_CLICKHOUSE_CLUSTER (host:port,...). In CI (CI=true) a test that needs a missing
# service fails; elsewhere it skips and says how to get the service.
#
# chDB allows one data directory per process: every test that opens a chDB store must use the
# session's `chdb_dir` (a fresh database per test keeps tests apart).
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SERVICES = Path(__file__).parent / "services"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def need_service(var: str, what: str) -> tuple[str, int]:
    """The ``(host, port)`` of a service the test needs; fails in CI, skips elsewhere."""
    address = os.environ.get(var, "")
    problem = ""
    if not address:
        problem = f"{var} is not set"
    else:
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
            return host, int(port)
        except (OSError, ValueError) as exc:
            problem = f"{var}={address} does not answer ({exc})"
    message = (f"needs a {what}: {problem} (tests/services/run-tests.sh starts one and sets "
               f"{var})")
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def unique(prefix: str = "t") -> str:
    """A fresh name for a database, topic prefix or consumer group."""
    return f"{prefix}{uuid.uuid4().hex[:12]}"


@pytest.fixture
def unique_name() -> Any:
    """``unique_name(prefix)``: a fresh name for a database, topic or consumer group."""
    return unique


@pytest.fixture(scope="session")
def kafka_address() -> str:
    host, port = need_service("ROCEWATCH_TEST_KAFKA", "Kafka broker")
    return f"{host}:{port}"


@pytest.fixture(scope="session")
def clickhouse_address() -> tuple[str, int]:
    return need_service("ROCEWATCH_TEST_CLICKHOUSE", "ClickHouse server")


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one chDB data directory of this test process."""
    return tmp_path_factory.mktemp("chdb")


@pytest.fixture
def kafka_settings(kafka_address: str) -> Any:
    """Bus settings for the test broker: small partitions count, fast group moves."""
    from pipeline.config import BusSettings, KafkaSettings

    return BusSettings(kind="kafka", kafka=KafkaSettings(
        bootstrap=kafka_address, partitions=4, linger_ms=5, group_prefix=unique("g") + "-",
        session_timeout_ms=6000, heartbeat_interval_ms=500, bootstrap_timeout_ms=10_000))


@pytest.fixture
def kafka_bus(kafka_settings: Any) -> Iterator[Any]:
    from pipeline.bus.kafka import KafkaBus

    bus = KafkaBus(kafka_settings)
    yield bus
    bus.close()


@pytest.fixture
def chdb_store(chdb_dir: Path) -> Iterator[Any]:
    """A chDB store on a database of its own."""
    from pipeline.config import StoreSettings
    from pipeline.store.base import open_store

    store = open_store(StoreSettings(kind="chdb", chdb_path=str(chdb_dir), database=unique("db")))
    yield store
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")
    store.close()


def clickhouse_settings(address: tuple[str, int], database: str, **store: Any) -> Any:
    from pipeline.config import ClickHouseSettings, StoreSettings

    ch = store.pop("clickhouse", {})
    return StoreSettings(kind="clickhouse", database=database, clickhouse=ClickHouseSettings(
        host=address[0], port=address[1], **ch), **store)


@pytest.fixture
def clickhouse_store(clickhouse_address: tuple[str, int]) -> Iterator[Any]:
    """A ClickHouse-server store on a database of its own."""
    from pipeline.store.base import open_store

    store = open_store(clickhouse_settings(clickhouse_address, unique("db")))
    yield store
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")
    store.close()


@pytest.fixture(params=["chdb", "clickhouse"])
def store(request: pytest.FixtureRequest) -> Any:
    """Every store backend in turn: the same tests run on each."""
    return request.getfixturevalue(f"{request.param}_store")


def need_cluster(var: str, script: str, what: str, name: str = "") -> Any:
    """The :class:`tests.services.clusters.Cluster` a test needs, every node answering; fails
    in CI, skips elsewhere."""
    from tests.services.clusters import cluster_from_env

    addresses = os.environ.get(var, "")
    problem = f"{var} is not set" if not addresses else ""
    for address in filter(None, addresses.split(",")):
        host, _, port = address.strip().rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
        except (OSError, ValueError) as exc:
            problem = f"{address} of {var} does not answer ({exc})"
            break
    if not problem:
        return cluster_from_env(script, addresses, name)
    message = (f"needs a {what}: {problem} (tests/services/run-tests.sh starts one and sets "
               f"{var})")
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def need_control(cluster: Any) -> None:
    """Fail (CI) or skip unless this run started ``cluster`` and may kill its nodes."""
    if not cluster.controllable:
        message = (f"killing nodes of {cluster.script} needs the cluster "
                   f"tests/services/run-tests.sh started for this run")
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def clickhouse_cluster() -> Any:
    """The ClickHouse cluster (2 shards x 2 replicas, ZooKeeper), its nodes s1r1 s1r2 s2r1 s2r2;
    ``.name`` is the cluster's name in the servers' remote_servers."""
    return need_cluster("ROCEWATCH_TEST_CLICKHOUSE_CLUSTER", "clickhouse-cluster.sh",
                        "ClickHouse cluster (2 shards x 2 replicas)",
                        os.environ.get("ROCEWATCH_TEST_CLICKHOUSE_CLUSTER_NAME", ""))


@pytest.fixture(scope="session")
def kafka_cluster() -> Any:
    """The 3-broker Kafka cluster (KRaft, min.insync.replicas 2), its brokers b1 b2 b3."""
    return need_cluster("ROCEWATCH_TEST_KAFKA_CLUSTER", "kafka-cluster.sh",
                        "3-broker Kafka cluster")


def cluster_store_settings(cluster: Any, database: str, **store: Any) -> Any:
    """Store settings for the ClickHouse cluster: its first node, the others to fail over to."""
    first, *others = cluster.nodes
    ch = {"cluster": cluster.name, "alt_hosts": [n.address for n in others],
          "connect_timeout_s": 2, **store.pop("clickhouse", {})}
    return clickhouse_settings((first.host, first.port), database, clickhouse=ch, **store)


@pytest.fixture
def clickhouse_cluster_store(clickhouse_cluster: Any) -> Iterator[Any]:
    """A store on the ClickHouse cluster (Distributed over replicated shards), a database of its
    own; whatever a test killed is started again before the database is dropped."""
    from pipeline.store.base import open_store

    store = open_store(cluster_store_settings(clickhouse_cluster, unique("db")))
    yield store
    if clickhouse_cluster.controllable:
        clickhouse_cluster.heal()
    store.execute(f"DROP DATABASE IF EXISTS {store.database} ON CLUSTER {clickhouse_cluster.name}")
    store.close()


@dataclass
class KafkaBroker:
    """The test broker that run-tests.sh started, which a test may stop and start again."""

    address: str

    def _run(self, verb: str) -> None:
        subprocess.run([str(SERVICES / "kafka.sh"), verb], check=True, capture_output=True,
                       timeout=120)

    def stop(self) -> None:
        self._run("stop")

    def start(self) -> None:
        self._run("start")


@pytest.fixture
def kafka_broker(kafka_address: str) -> Iterator[KafkaBroker]:
    """Control of the broker's process; only when this run started it (run-tests.sh)."""
    port = kafka_address.rpartition(":")[2]
    if not os.environ.get("ROCEWATCH_SERVICES_DIR") or os.environ.get("KAFKA_PORT") != port:
        message = "restarting the broker needs the one tests/services/run-tests.sh started"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    broker = KafkaBroker(kafka_address)
    yield broker
    # whatever the test did, leave a running broker behind for the tests after it
    broker.start()
# --- end services ---
