"""Fixtures for the collector tests: sinks and running collectors, scripted gNMI targets
(:mod:`tests.collectors.gnmi_target`), TLS material (:mod:`tests.collectors.pki`), snmpsim and
snmpd (:mod:`tests.collectors.snmp_agents`).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lab.runtime import Lab
from lab.scenario.load import parse_scenario
from pipeline.model import SampleBatch
from pipeline.topology.neighbors import NeighborReport
from tests.collectors.gnmi_target import ScriptedTarget
from tests.collectors.pki import Pki, issue_pki
from tests.collectors.snmp_agents import (
    DATA,
    SNMPSIM,
    NetNs,
    Snmpd,
    SnmpSim,
    bundled_recording,
    is_root,
)

# -- sinks ------------------------------------------------------------------------------------


class Sink:
    """Collects emitted batches; tests wait on conditions over them, never on sleeps."""

    def __init__(self) -> None:
        self.batches: list[SampleBatch] = []
        self._cond = threading.Condition()

    def __call__(self, batch: SampleBatch) -> None:
        with self._cond:
            self.batches.append(batch)
            self._cond.notify_all()

    def rows(self) -> list[tuple[int, str, str, str, int, float, int]]:
        with self._cond:
            batches = list(self.batches)
        return [row for b in batches for row in b.rows()]

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout: float = 20.0,
                 what: str = "condition") -> list[Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                rows = [row for b in self.batches for row in b.rows()]
                if predicate(rows):
                    return rows
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; last rows: {rows[-8:]}")
                self._cond.wait(min(left, 0.5))


@pytest.fixture
def sink() -> Sink:
    return Sink()


class Running:
    """A collector running in a thread; stopped (and checked stopped) on exit."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.stop = threading.Event()
        self.thread = threading.Thread(target=collector.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> Any:
        self.thread.start()
        return self.collector

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive(), "the collector did not stop"


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 15.0) -> None:
    """Poll a collector's state (health has no event to wait on) until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Reports:
    """The LLDP reports a collector hands over, as its readers deliver them (from their
    thread)."""

    def __init__(self) -> None:
        self._got: list[NeighborReport] = []
        self._lock = threading.Lock()

    def take(self, report: NeighborReport) -> None:
        with self._lock:
            self._got.append(report)

    def all(self) -> list[NeighborReport]:
        with self._lock:
            return list(self._got)

    def of(self, device: str) -> list[NeighborReport]:
        return [r for r in self.all() if r.device == device]


@contextmanager
def running_lab(scenario: dict[str, Any], speed: float, out_dir: Path,
                until: float = 1.0) -> Iterator[Lab]:
    """A lab running ``scenario`` until the block ends, its first ``until`` simulated seconds
    done."""
    running = Lab(parse_scenario(scenario), speed=speed, out_dir=out_dir)
    running.start()
    try:
        assert running.wait_until(until, timeout=60)
        yield running
    finally:
        running.stop()


def write_targets(path: Path, targets: list[dict[str, Any]]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"format": 1, "targets": targets}))
    return path


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def gnmi_targets() -> Iterator[list[ScriptedTarget]]:
    """Targets a test starts; all stopped afterwards."""
    started: list[ScriptedTarget] = []
    yield started
    for target in started:
        target.stop()


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, another CA."""
    return issue_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def snmpsim(tmp_path: Path) -> Iterator[SnmpSim]:
    """snmpsim with the recorded leaf (community ``leaf9``) and a broken device (``broken``,
    whose ifHCOutOctets answers with an SNMP error)."""
    if not SNMPSIM.exists():
        pytest.skip("snmpsim is not installed in .venv")
    data = tmp_path / "snmpsim"
    data.mkdir()
    shutil.copy(DATA / "leaf9.snmprec", data / "leaf9.snmprec")
    lines = (DATA / "leaf9.snmprec").read_text().splitlines()
    broken = [line if not line.startswith("1.3.6.1.2.1.31.1.1.1.10.") else
              line.split("|")[0] + "|70:error|op=any,status=genError" for line in lines]
    (data / "broken.snmprec").write_text("\n".join(broken) + "\n")
    sim = SnmpSim(data, tmp_path / "snmpsim-cache").start()
    yield sim
    sim.stop()


@pytest.fixture
def snmpsim_bundled(tmp_path: Path) -> Iterator[SnmpSim]:
    """snmpsim serving our leaf (community ``leaf9``) and three recordings snmpsim ships, each
    under its own name: ``linux-full-walk`` (hrSystemDate in 2010), ``winxp-full-walk`` (ifTable
    without ifXTable, hrSystemDate in 2013), ``linksys-system`` (the system group only)."""
    if not SNMPSIM.exists():
        pytest.skip("snmpsim is not installed in .venv")
    data = tmp_path / "snmpsim-bundled"
    data.mkdir()
    shutil.copy(DATA / "leaf9.snmprec", data / "leaf9.snmprec")
    for name in ("linux-full-walk", "winxp-full-walk", "linksys-system"):
        shutil.copy(bundled_recording(name), data / f"{name}.snmprec")
    sim = SnmpSim(data, tmp_path / "snmpsim-bundled-cache").start()
    yield sim
    sim.stop()


@pytest.fixture
def snmpd(tmp_path: Path) -> Iterator[Snmpd]:
    if shutil.which("snmpd") is None:
        pytest.skip("net-snmp's snmpd is not installed (apt-get install snmpd snmp)")
    agent = Snmpd(tmp_path / "snmpd").start()
    yield agent
    agent.stop()


@pytest.fixture
def netns_snmpd(tmp_path: Path) -> Iterator[tuple[NetNs, Snmpd]]:
    """snmpd serving 32 veth pairs (64 interfaces) inside a namespace of its own."""
    if shutil.which("snmpd") is None or not is_root:
        pytest.skip("needs snmpd and root (network namespaces)")
    ns = NetNs(f"rwtest{os.getpid()}", 32).create()
    agent = Snmpd(tmp_path / "snmpd-ns", netns=ns.name)
    try:
        agent.start()
        yield ns, agent
    finally:
        agent.stop()
        ns.delete()
