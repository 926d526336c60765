"""Roles run N times as real OS processes (``rocewatch run --role ...``) on the Kafka cluster,
coordinated through the test ZooKeeper: their config, their metrics, and who holds a group's
nodes in ZooKeeper (the yardstick of the lease and assignment tests)."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from pipeline.bus.base import Topics
from tests.pipeline.ingest.test_kafka import IngestProcess

SESSION_TIMEOUT_S = 2.0  # the test ZooKeeper's minSessionTimeout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Deployment:
    """One config for every process of a test (Kafka cluster, the test ClickHouse database,
    the test ZooKeeper under a root of its own); :meth:`start` runs one more process of a role
    with a metrics endpoint of its own."""

    def __init__(self, tmp: Path, config: dict[str, Any], store: Any) -> None:
        self.tmp = tmp
        self.store = store
        self.config = config
        self.topics = Topics(config["bus"]["topic_prefix"])
        self.processes: list[RoleProcess] = []

    @property
    def coordination(self) -> dict[str, Any]:
        return dict(self.config["coordination"])

    def start(self, role: str, **sections: Any) -> RoleProcess:
        n = len(self.processes)
        port = free_port()
        config = {**self.config, **sections, "metrics": {"listen": f"127.0.0.1:{port}"}}
        path = self.tmp / f"{role}-{n}.yaml"
        path.write_text(yaml.safe_dump(config))
        proc = RoleProcess(path, self.tmp / f"{role}-{n}.log", role, port)
        self.processes.append(proc)
        return proc

    def stop(self) -> None:
        for p in self.processes:
            p.stop()


class RoleProcess(IngestProcess):
    """A role's process and its ``/metrics``."""

    def __init__(self, config: Path, log: Path, role: str, port: int) -> None:
        super().__init__(config, log, role)
        self.port = port
        self.pid = self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def metrics(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        """Every sample of the process's metrics by name ({} while it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",
                                        timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return {}
        out: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out.setdefault(s.name, []).append((dict(s.labels), s.value))
        return out

    def value(self, name: str, **labels: str) -> float | None:
        found = [v for have, v in self.metrics().get(name, [])
                 if labels.items() <= have.items()]
        return sum(found) if found else None


def holders(zookeeper: str, path: str) -> list[str]:
    """The identities (``host:pid``) of a group's members, oldest first."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper, timeout=SESSION_TIMEOUT_S)
    zk.start(timeout=10)
    try:
        if not zk.exists(path):
            return []
        children = sorted(zk.get_children(path), key=lambda c: c.split("-", 1)[1])
        return [zk.get(f"{path}/{c}")[0].decode() for c in children]
    finally:
        zk.stop()
        zk.close()


def pid_of(identity: str) -> int:
    return int(identity.rsplit(":", 1)[1])


def watch_every(seconds: float, until: float) -> Iterator[float]:
    """Monotonic instants ``seconds`` apart until ``until`` (a sampling clock for the record)."""
    while (now := time.monotonic()) < until:
        yield now
        time.sleep(seconds)
