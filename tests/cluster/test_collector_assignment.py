"""Collectors run N times: three ``rocewatch run --role collect`` processes share the lab's gNMI
targets through their ZooKeeper group (:mod:`collectors.assignment`); one is killed with SIGKILL
and its targets move to the other two.

Each process's ``/metrics`` says which targets it collects (``rocewatch_collector_up`` 1: data
arrives). Sampled every 0.2 s: the hand-over (from the kill until every target is up again,
each in one process), and how long any target was up in two processes at once (polled twice).
Asserted: before and after, every target is collected by exactly one live process, and the dead
one's targets end with the survivors; the numbers are printed for docs/deploy.md.
"""

from __future__ import annotations

import itertools
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runtime import Lab
from tests.cluster.known_set import wait_for
from tests.cluster.roles import Deployment, RoleProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = """
format: 1
name: collect-n
seed: 5
duration_s: 900
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 4
  hosts_per_leaf: 1
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {gnmi: 1.0, snmp: 0.0}
  profiles: [openconfig]
routing: ecmp
traffic:
  - {pattern: allreduce, hosts: all, load: 0.3, qps_per_flow: 2}
"""
INTERVAL_S = 1.0  # the lab runs at speed 1: one sample interval is a wall second


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    scenario = tmp_path / "collect-n.yaml"
    scenario.write_text(SCENARIO)
    running = Lab(scenario, speed=1.0, out_dir=tmp_path / "lab").start()
    yield running
    running.stop()


def collecting(p: RoleProcess) -> set[str]:
    """The targets a process collects now (data arriving)."""
    return {labels["target"] for labels, v in p.metrics().get("rocewatch_collector_up", [])
            if v == 1.0}


class Sampler:
    """Every 0.2 s, which targets each live process collects."""

    def __init__(self, procs: list[RoleProcess]) -> None:
        self.procs = procs
        self.seen: list[tuple[float, dict[int, set[str]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.seen.append((time.monotonic(),
                              {p.pid: collecting(p) for p in self.procs if p.alive}))

    def twice(self, since: float) -> dict[str, float]:
        """Per target, the seconds after ``since`` it was up in two processes at once."""
        out: dict[str, float] = {}
        samples = [(t, s) for t, s in self.seen if t >= since]
        for (t0, now), (t1, _) in itertools.pairwise(samples):
            counts: dict[str, int] = {}
            for targets in now.values():
                for target in targets:
                    counts[target] = counts.get(target, 0) + 1
            for target, n in counts.items():
                if n > 1:
                    out[target] = out.get(target, 0.0) + (t1 - t0)
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def owners(procs: list[RoleProcess], targets: set[str]) -> dict[str, list[int]] | None:
    """Each target's collecting processes, once every target has exactly one (else None)."""
    found: dict[str, list[int]] = {t: [] for t in targets}
    assert sum(p.alive for p in procs) >= 2, "a collect process died (see its log)"
    for p in procs:
        if p.alive:
            for t in collecting(p):
                found.setdefault(t, []).append(p.pid)
    return found if all(len(v) == 1 for v in found.values()) else None


def test_a_killed_collectors_targets_move_to_the_others(roles: Deployment, lab: Lab) -> None:
    targets = {s["name"] for s in lab.agents()["switches"]}
    spec = {"type": "gnmi", "name": "fabric", "agents": str(lab.out_dir / "agents.json"),
            "flush_interval_s": 0.1, "backoff_initial_s": 0.1, "backoff_max_s": 0.5,
            "connect_timeout_s": 2, "lldp_interval_s": 0}
    procs = [roles.start("collect", collectors=[spec]) for _ in range(3)]
    sampler = Sampler(procs)
    try:
        before = wait_for(lambda: (o := owners(procs, targets)) and len(
            {pid for pids in o.values() for pid in pids}) >= 2 and o, 120,
            "the targets spread over the processes, each collected once")
        held: dict[int, set[str]] = {}
        for target, (pid,) in before.items():
            held.setdefault(pid, set()).add(target)
        victim = max(procs, key=lambda p: len(held.get(p.pid, ())))
        moved = held[victim.pid]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        killed = time.monotonic()
        after = wait_for(lambda: owners(procs, targets), 120,
                         "every target collected once by the survivors")
        handed_over = time.monotonic() - killed
        time.sleep(3)  # the record: nothing polled twice once the view settled
        twice = sampler.twice(killed)
        joining = sampler.twice(0.0)
    finally:
        sampler.stop()
    print(f"\ncollect x3 over {len(targets)} gNMI targets ({INTERVAL_S:.0f}s interval), held "
          f"{sorted(len(v) for v in held.values())}; killed pid {victim.pid} (SIGKILL) with "
          f"{len(moved)} targets: every target collected again, once, {handed_over:.1f}s later "
          f"({handed_over / INTERVAL_S:.1f} intervals; ZooKeeper session "
          f"{roles.coordination['session_timeout_s']}s); polled twice after the kill: "
          f"{max(twice.values(), default=0.0):.1f}s at most ({len(twice)} targets); "
          f"over the whole run, the joins included: "
          f"{max(joining.values(), default=0.0):.1f}s at most ({len(joining)} targets)")
    survivors = {p.pid for p in procs if p.alive}
    assert victim.pid not in survivors and len(survivors) == 2
    assert set(after) == targets
    assert {pids[0] for pids in after.values()} <= survivors
    assert {t for t in moved if after[t][0] in survivors} == moved
