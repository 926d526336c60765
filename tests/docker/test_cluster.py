"""The multi-node deployment (docker/compose.cluster.yaml): Docker cannot run here, so its shape
is checked against what the test clusters run (tests/services: three KRaft brokers with
min.insync.replicas 2, ZooKeeper, ClickHouse 2 shards x 2 replicas), the ClickHouse files against
each other and against rocewatch's config, and every role container's config passes
``check-config`` for its role."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pipeline.inventory import Inventory
from rocewatch.app import ROLES
from rocewatch.settings import check
from tests.docker.compose_files import (
    DOCKER,
    container_env,
    container_settings,
    host_path,
    load_compose,
    role_services,
)

CLICKHOUSE_DIR = DOCKER / "cluster" / "clickhouse"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose("compose.cluster.yaml")


def engines(compose: dict[str, Any], image: str) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose["services"].items()
            if str(svc.get("image", "")).startswith(image)}


def test_three_brokers_form_one_quorum_with_replicated_topics(compose: dict[str, Any],
                                                              tmp_path: Path) -> None:
    brokers = engines(compose, "apache/kafka:4.")
    assert len(brokers) == 3
    envs = {name: svc["environment"] for name, svc in brokers.items()}
    voters = {e["KAFKA_CONTROLLER_QUORUM_VOTERS"] for e in envs.values()}
    assert len(voters) == 1, "every broker names the same quorum"
    quorum = dict(v.split("@") for v in voters.pop().split(","))
    assert {int(i): h.split(":")[0] for i, h in quorum.items()} == \
        {int(e["KAFKA_NODE_ID"]): name for name, e in envs.items()}
    for name, e in envs.items():
        assert e["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert e["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{name}:9092"
        assert int(e["KAFKA_MIN_INSYNC_REPLICAS"]) == 2
        assert int(e["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == 3
        assert brokers[name]["healthcheck"]["test"]
    assert len({e["CLUSTER_ID"] for e in envs.values()}) == 1
    # rocewatch bootstraps from all three and creates topics replicated on all three
    _, svc = role_services(compose)["ingest"]
    kafka = container_settings(svc, tmp_path).bus.kafka
    assert sorted(kafka.bootstrap.split(",")) == sorted(f"{b}:9092" for b in brokers)
    assert kafka.replication == 3 > int(next(iter(envs.values()))["KAFKA_MIN_INSYNC_REPLICAS"])


def replicas(shard: ET.Element) -> list[str]:
    return [str(r.findtext("host")) for r in shard.findall("replica")]


def test_the_clickhouse_cluster_is_two_shards_of_two_replicas(compose: dict[str, Any],
                                                              tmp_path: Path) -> None:
    servers = engines(compose, "clickhouse/clickhouse-server:")
    assert len(servers) == 4
    cluster = ET.parse(CLICKHOUSE_DIR / "cluster.xml").getroot()
    fabric = cluster.find("remote_servers/fabric")
    assert fabric is not None
    shards = fabric.findall("shard")
    assert [len(replicas(s)) for s in shards] == [2, 2]
    assert all(s.findtext("internal_replication") == "true" for s in shards)
    assert sorted(h for s in shards for h in replicas(s)) == sorted(servers)
    zookeeper = cluster.findtext("zookeeper/node/host")
    assert zookeeper in compose["services"] and cluster.find("distributed_ddl/path") is not None
    seen = set()
    for number, shard in enumerate(shards, start=1):
        for host in replicas(shard):
            svc = servers[host]
            assert svc["hostname"] == host  # what the replica tells the others to fetch from
            mounts = {str(v).split(":")[1]: str(v).split(":")[0] for v in svc["volumes"]}
            assert host_path("/etc/clickhouse-server/config.d/cluster.xml", svc) == \
                (CLICKHOUSE_DIR / "cluster.xml").resolve()
            macros = ET.parse(host_path("/etc/clickhouse-server/config.d/macros.xml", svc))
            assert int(str(macros.findtext("macros/shard"))) == number
            replica = macros.findtext("macros/replica")
            assert replica not in seen
            seen.add(replica)
            assert "/var/lib/clickhouse" in mounts  # a volume of its own
            assert svc["depends_on"][zookeeper]["condition"] == "service_healthy"
    # rocewatch writes through this cluster, and can reach every server of it
    _, svc = role_services(compose)["ingest"]
    ch = container_settings(svc, tmp_path).store.clickhouse
    assert ch.cluster == "fabric"
    assert sorted([f"{ch.host}:{ch.port}", *ch.alt_hosts]) == sorted(f"{s}:9000" for s in servers)


def test_every_role_runs_and_the_scalable_ones_more_than_once(compose: dict[str, Any]) -> None:
    services = role_services(compose)
    count: dict[str, int] = {}
    for role, svc in services.values():
        count[role] = count.get(role, 0) + int(svc.get("deploy", {}).get("replicas", 1))
        assert all(svc["depends_on"][e]["condition"] == "service_healthy"
                   for e in (*engines(compose, "apache/kafka:"),
                             *engines(compose, "clickhouse/")))
    assert set(count) == {*ROLES, "correlate"}
    assert count["collect"] >= 2 and count["ingest"] >= 2 and count["api"] >= 2
    assert count["detect"] >= 2, "detection partitioned across processes"
    assert count["correlate"] >= 2, "a correlator and a standby"
    assert count["remediate"] == 1, "one active remediation"


def test_the_collectors_split_the_targets_between_them(compose: dict[str, Any],
                                                       tmp_path: Path) -> None:
    from collectors.inventory import load_inventory

    collectors = [svc for role, svc in role_services(compose).values() if role == "collect"]
    shards = [container_env(svc)["ROCEWATCH_COLLECTORS__0__SHARD"] for svc in collectors]
    assert sorted(shards) == [f"{i}/{len(shards)}" for i in range(len(shards))]
    spec = container_settings(collectors[0], tmp_path).collectors[0]
    inventory: Inventory = load_inventory(spec.options["targets"])
    polled = [t.name for s in shards for t in inventory.select("gnmi", s)]
    assert sorted(polled) == sorted(t.name for t in inventory.select("gnmi")), \
        "every target polled by exactly one collector"


@pytest.mark.parametrize("service", ["collect-0", "collect-1", "ingest", "detect", "correlate",
                                     "remediate", "api"])
def test_each_role_config_passes_check_config(compose: dict[str, Any], service: str,
                                              tmp_path: Path) -> None:
    role, svc = role_services(compose)[service]
    settings = container_settings(svc, tmp_path)
    check(settings, (role,))
    assert settings.bus.kind == "kafka" and settings.store.kind == "clickhouse"
    assert settings.detection.mode == "partitioned"


def test_published_ports_bind_loopback_only(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port}"
