"""The test clusters that tests/services/ starts, as the tests see them: their nodes' addresses,
and control of the nodes' processes (kill -9 by PID, start again) for the failover tests.

``clickhouse-cluster.sh`` and ``kafka-cluster.sh`` run the processes and answer ``nodes``,
``pid NODE`` and ``start-node NODE``; run-tests.sh exports the addresses
(``ROCEWATCH_TEST_CLICKHOUSE_CLUSTER``, ``ROCEWATCH_TEST_KAFKA_CLUSTER``: host:port, comma
separated, in the order of ``nodes``). Only a run that started a cluster (its run directory is
``ROCEWATCH_SERVICES_DIR``) may kill its nodes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SERVICES = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Node:
    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Cluster:
    """One test cluster: its nodes in the script's order, and what a test may do to them."""

    script: str
    nodes: tuple[Node, ...]
    #: this test run started the cluster, so its processes are ours to kill and start
    controllable: bool
    #: the cluster's own name, where it has one (ClickHouse's remote_servers entry)
    name: str = ""

    def _run(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run([str(SERVICES / self.script), *args], capture_output=True,
                              text=True, timeout=timeout, check=False)
        if done.returncode:
            raise RuntimeError(f"{self.script} {' '.join(args)} failed: "
                               f"{(done.stderr or done.stdout).strip()}")
        return done.stdout

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def pid(self, name: str) -> int:
        return int(self._run("pid", name).strip())

    def alive(self, name: str) -> bool:
        try:
            os.kill(self.pid(name), 0)
        except (ProcessLookupError, RuntimeError, ValueError):
            return False
        return True

    def kill(self, name: str) -> int:
        """SIGKILL the node's process by its PID (a crash: no shutdown at all), wait until it
        is gone; returns the PID."""
        pid = self.pid(name)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return pid
            time.sleep(0.05)
        raise RuntimeError(f"{self.script}: {name} (pid {pid}) outlived SIGKILL for 30 s")

    def start(self, name: str) -> None:
        """Start the node again on its ports, and wait until it serves."""
        self._run("start-node", name)

    def heal(self) -> list[str]:
        """Start every node that is not running; returns their names."""
        dead = [n.name for n in self.nodes if not self.alive(n.name)]
        for name in dead:
            self.start(name)
        return dead


def cluster_from_env(script: str, addresses: str, name: str = "") -> Cluster:
    """The cluster ``script`` runs, with the addresses a run exported for it."""
    names = subprocess.run([str(SERVICES / script), "nodes"], capture_output=True, text=True,
                           timeout=30, check=True).stdout.split()
    parts = [a.strip() for a in addresses.split(",") if a.strip()]
    if len(parts) != len(names):
        raise RuntimeError(f"{script} has {len(names)} nodes but the address list names "
                           f"{len(parts)}: {addresses}")
    nodes = tuple(Node(name, a.rpartition(":")[0], int(a.rpartition(":")[2]))
                  for name, a in zip(names, parts, strict=True))
    return Cluster(script, nodes, _started_here(script, addresses), name)


def _started_here(script: str, addresses: str) -> bool:
    """The cluster in this run's directory is the one the addresses name."""
    if not os.environ.get("ROCEWATCH_SERVICES_DIR"):
        return False
    done = subprocess.run([str(SERVICES / script), "env"], capture_output=True, text=True,
                          timeout=30, check=False)
    return done.returncode == 0 and f"={addresses}\n" in done.stdout + "\n"
