"""The fabric ``bench fabric`` watches: the lab's physics of the whole fabric, served by real gNMI
and SNMP targets on loopback from a few processes of their own.

* **The lab process**: :class:`lab.runtime.Lab` simulates the whole fabric (its simulator in a
  child process, publishing snapshots into the shared-memory ring) and runs the lab's own agents
  for the switches the scenario assigns SNMP (``agents_for=``), and the TE controller.
* **Shard processes** (``--source-procs``): each attaches to the same snapshot ring and serves the
  gNMI targets of every ``n``-th gNMI switch: the lab's :class:`lab.gnmi.target.GnmiTarget`
  (Subscribe SAMPLE/ON_CHANGE, Get, Capabilities, exactly as the lab's agents) over models made
  from one template per dialect and role (:mod:`rocewatch.bench.fabric_models`), one grpc.aio
  server per target on the shard's event loop. A shard does not apply Sets (remediation runs
  dry-run in the benchmark).

So the streams are the lab's: counters that grow at the rates the simulated traffic gives, and
faults injected by the scenario as the lab injects them, seen by every port they touch. None of
these processes is the platform's: their CPU is the source's, counted apart.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.sim.view import SimControl
from pipeline.errors import LabError
from rocewatch.bench.peers import Peer

LAB_CHILD = "from rocewatch.bench.fabric_source import lab_main; lab_main()"
SHARD_CHILD = "from rocewatch.bench.fabric_source import shard_main; shard_main()"
USERNAME = PASSWORD = "admin"


# -- the children -----------------------------------------------------------------------------


def lab_main() -> None:
    """``scenario speed dt tick out-dir``: the lab with agents for its SNMP switches only; prints
    what the shards and the platform need, and stops when standard input closes."""
    from lab.inventory import plan_agents
    from lab.runtime import Lab
    from lab.scenario.load import load_scenario

    scenario = load_scenario(sys.argv[1])
    snmp = [p.switch for p in plan_agents(scenario) if p.protocol == "snmp"]
    lab = Lab(scenario, speed=float(sys.argv[2]), dt=float(sys.argv[3]),
              tick_s=float(sys.argv[4]), out_dir=Path(sys.argv[5]), agents_for=snmp)
    lab.start()
    try:
        # the ring's name is the one thing the Lab API does not say; the shards attach to it
        block = lab._block
        assert block is not None
        print(json.dumps({"block": block.name, "slots": block.slots, "size": lab.layout.size,
                          "epoch_ns": lab.epoch_ns, "tick_s": lab.options.tick_s,
                          "agents": lab.agents(), "simulator_pid": lab.simulator_pid,
                          "te_url": lab.te_url}),
              flush=True)
        sys.stdin.read()
    finally:
        lab.stop()


def shard_main() -> None:
    """``config.json``: serve gNMI targets for the switches it lists, from the lab's ring."""
    from lab.agents import AgentHost
    from lab.gnmi.target import GnmiTarget
    from lab.inventory import plan_agents
    from lab.lldp import LldpFabric
    from lab.runner import SimOptions, published_layout
    from lab.scenario.load import load_scenario
    from lab.sim.snapshot_ring import SharedBlock
    from lab.sim.view import SimView
    from lab.wiring import build_wiring
    from rocewatch.bench.fabric_models import FabricModels

    cfg = json.loads(Path(sys.argv[1]).read_text())
    scenario = load_scenario(cfg["scenario"])
    wiring = build_wiring(scenario.topology())
    layout = published_layout(scenario, wiring, SimOptions().buffers)
    if layout.size != cfg["size"]:
        raise SystemExit(f"snapshot sizes disagree ({layout.size} here, {cfg['size']} in the lab)")
    plans = plan_agents(scenario)
    block = SharedBlock(layout.size, name=cfg["block"], slots=cfg["slots"])
    view = SimView(block, layout, cfg["epoch_ns"], cfg["speed"], cfg["tick_s"])
    lldp = LldpFabric(scenario, wiring, layout, {p.switch: p.profile for p in plans})
    models = FabricModels(wiring, layout, lldp, cfg["queues"], lambda: view.snapshot,
                          epoch_ns=cfg["epoch_ns"])
    host = AgentHost()
    host.start()
    host.spawn(view.poll_forever())
    control = ReadOnlyControl()
    profile = {p.switch: p.profile for p in plans}
    addresses: dict[str, str] = {}
    for switch in cfg["switches"]:
        target = GnmiTarget(models.model(switch, profile[switch]), view, control,
                            (USERNAME, PASSWORD), scenario.sample_interval_s)
        port = host.call(host.start_gnmi(switch, target, 0, None, False))
        addresses[switch] = f"127.0.0.1:{port}"
    print(json.dumps({"addresses": addresses}), flush=True)
    try:
        sys.stdin.read()
    finally:
        host.stop()
        block.close()


class ReadOnlyControl(SimControl):
    """What a shard's targets have instead of the simulator's control pipe: nothing to apply
    a Set with (the benchmark's remediation decides drains in dry-run and never sets)."""

    def __init__(self) -> None:
        """No pipe, no block: nothing is ever sent."""

    def send(self, kind: str, *args: Any) -> int:
        raise LabError(f"this benchmark target does not apply {kind!r}: its remediation runs "
                       f"dry-run")

    def applied(self) -> int:
        return 0

    async def wait_applied_async(self, seq: int, timeout_s: float = 5.0) -> None:
        """Nothing is ever sent."""


# -- the parent's side ------------------------------------------------------------------------


@dataclass
class Source:
    """The running source: the inventory the collectors read, and every process it runs."""

    agents: dict[str, Any]
    epoch_ns: int
    block: str
    slots: int
    size: int
    te_url: str
    pids: dict[str, int] = field(default_factory=dict)

    def write_agents(self, path: Path) -> Path:
        path.write_text(json.dumps(self.agents, indent=1))
        return path


def shares(n: int, scenario: Any) -> list[list[str]]:
    """The gNMI switches split over ``n`` shards, every ``n``-th (each shard a mix of roles)."""
    from lab.inventory import plan_agents

    gnmi = [p.switch for p in plan_agents(scenario) if p.protocol == "gnmi"]
    return [gnmi[i::n] for i in range(n) if gnmi[i::n]]


@contextmanager
def fabric_source(scenario_path: Path, work: Path, speed: float, dt: float, tick_s: float,
                  procs: int, queues: str) -> Iterator[Source]:
    """The lab process and ``procs`` shards serving ``scenario_path``'s fabric."""
    from lab.inventory import plan_agents
    from lab.scenario.load import load_scenario

    scenario = load_scenario(scenario_path)
    peers: list[Peer] = []
    try:
        lab = Peer(LAB_CHILD, str(scenario_path), str(speed), str(dt), str(tick_s),
                   str(work / "lab"))
        peers.append(lab)
        info = lab.first
        for i, share in enumerate(shares(procs, scenario)):
            cfg = work / f"shard{i}.json"
            cfg.write_text(json.dumps({
                "scenario": str(scenario_path), "block": info["block"], "slots": info["slots"],
                "size": info["size"], "epoch_ns": info["epoch_ns"], "speed": speed,
                "tick_s": info["tick_s"], "queues": queues, "switches": share}))
            peers.append(Peer(SHARD_CHILD, str(cfg)))
        addresses: dict[str, str] = {}
        for peer in peers[1:]:
            addresses.update(peer.first["addresses"])
        lab_entries = {s["name"]: s for s in info["agents"]["switches"]}
        switches: list[dict[str, Any]] = []
        for plan in plan_agents(scenario):
            if plan.switch in lab_entries:
                switches.append(lab_entries[plan.switch])
            else:
                switches.append({"name": plan.switch, "role": plan.role, "snmp": None,
                                 "gnmi": {"address": addresses[plan.switch],
                                          "profile": plan.profile, "tls": None,
                                          "username": USERNAME, "password": PASSWORD}})
        agents = {**info["agents"], "switches": switches}
        pids = {"lab": lab.proc.pid, **{f"shard{i}": p.proc.pid
                                        for i, p in enumerate(peers[1:])}}
        if info["simulator_pid"]:
            pids["simulator"] = int(info["simulator_pid"])
        yield Source(agents, int(info["epoch_ns"]), info["block"], int(info["slots"]),
                     int(info["size"]), str(info["te_url"]), pids)
    finally:
        for peer in reversed(peers):
            peer.close()
