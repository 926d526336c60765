"""Random scenarios for backtesting detection on fabrics and faults nobody tuned for.

``rocewatch scenario generate DIR --count N --seed S`` writes N valid scenario files (format 1):
fabric shapes, link speeds, agent mixes, vendor profiles, routing modes, traffic and cadence drawn
at random, each with zero (a control run), one or two faults of random kinds, targets and
parameters within the ranges real faults take (corruption from 1e-6 to 1e-3, NICs draining at 10
to 50 %, incasts of 2 to 12 senders...). Same seed, same files. Run them with
``rocewatch scenario suite DIR``: a detector change that only helps the public suite shows here.

About a quarter of the scenarios are three-tier fabrics (2-3 AI zones joined by 2-4 aggregation
switches), whose faults also take the new kinds of target: links to an aggregation switch, an
aggregation switch for ``buffer_misconfig``, a spine for ``ecmp_collision``, a deadlock cycle
through an aggregation switch. Everything about the three tiers is drawn from a random stream of
its own, so a scenario that stays two-tier is byte for byte what this seed gave before three
tiers existed.

About one scenario in eight also has a topology fault (``miswired_cable`` or
``lldp_neighbor_drop``, docs/lab.md "Topology faults") drawn from a stream of its own in the same
way, inside the scenario's other windows: the rest of every scenario is byte for byte what it
was before those kinds existed.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

from pipeline.kinds import (
    FAULT_BUFFER_MISCONFIG,
    FAULT_ECMP_COLLISION,
    FAULT_INCAST,
    FAULT_LINK_CORRUPTION,
    FAULT_LINK_FLAP,
    FAULT_MISWIRED_CABLE,
    FAULT_OPTICS_DEGRADE,
    FAULT_PFC_STORM,
    FORMAT_FAULT_KINDS,
    HOST_FAULTS,
    LINK_FAULTS,
    TOPOLOGY_FAULTS,
)
from pipeline.topology.model import Topology
from pipeline.topology.shape import FabricShape

THREE_TIER_SHARE = 0.25
TOPOLOGY_SHARE = 0.125


def _fabric(rng: random.Random) -> dict[str, Any]:
    link = rng.choice((100, 200, 400, 400))
    fabric: dict[str, Any] = {
        "spines": rng.choice((2, 3, 4)), "leaves": rng.randint(3, 8),
        "hosts_per_leaf": rng.randint(2, 4), "uplinks_per_pair": rng.choice((1, 1, 1, 2)),
        "link_gbps": link, "host_gbps": rng.choice([g for g in (100, 200, 400) if g <= link]),
    }
    mix = rng.random()
    if mix < 0.15:
        fabric["agents"] = {"gnmi": 0.0, "snmp": 1.0}
    elif mix < 0.4:
        fabric["agents"] = {"gnmi": 0.5, "snmp": 0.5}
    profiles = ["openconfig", "arista", "sonic"]
    rng.shuffle(profiles)
    fabric["profiles"] = profiles[: rng.randint(1, 3)]
    return fabric


def _traffic(rng: random.Random, first_leaf: str) -> list[dict[str, Any]]:
    entries = [{"pattern": rng.choice(("allreduce", "allreduce", "alltoall", "uniform")),
                "hosts": "all", "load": round(rng.uniform(0.2, 0.7), 2),
                "qps_per_flow": rng.choice((1, 2, 4, 8))}]
    if rng.random() < 0.3:
        entries.append({"pattern": "allreduce", "hosts": first_leaf,
                        "load": round(rng.uniform(0.1, 0.3), 2), "qps_per_flow": 4})
    return entries


def _three_tier(rng3: random.Random, fabric: dict[str, Any]) -> None:
    """Make ``fabric`` a fabric of AI zones joined by an aggregation tier (kept small enough to
    simulate at speed: at most 4 leaves per zone)."""
    fabric["leaves"] = min(fabric["leaves"], 4)
    fabric["zones"] = rng3.choice((2, 3))
    fabric["aggs"] = rng3.choice((2, 4))
    fabric["agg_uplinks_per_spine"] = rng3.choice((1, 1, 2))


def _topology(fabric: dict[str, Any]) -> Topology:
    return FabricShape(fabric["spines"], fabric["leaves"], fabric["hosts_per_leaf"],
                       fabric["uplinks_per_pair"], fabric["link_gbps"], fabric["host_gbps"],
                       fabric.get("zones", 1), fabric.get("aggs", 0),
                       fabric.get("agg_uplinks_per_spine", 1)).build()


def _cycle(rng: random.Random, topo: Topology, rng3: random.Random | None) -> list[str]:
    if rng3 is not None and rng3.random() < 0.5:
        # through the aggregation tier: leaf -> spine -> agg -> another spine of the zone -> leaf
        a = rng3.choice(topo.leaves)
        s, t = rng3.sample([sp for sp in topo.spines if topo.zone(sp) == topo.zone(a)], 2)
        g = rng3.choice(topo.aggs)
        return [f"{a}~{s}", f"{g}~{s}", f"{g}~{t}", f"{a}~{t}"]
    zone = topo.zone_switches(rng3.choice(topo.zones)) if rng3 is not None else topo.switches
    a, b = rng.sample([x for x in topo.leaves if x in zone], 2)
    s, t = rng.sample([x for x in topo.spines if x in zone], 2)
    return [f"{a}~{s}", f"{b}~{s}", f"{b}~{t}", f"{a}~{t}"]


def _fault(rng: random.Random, kind: str, topo: Topology, taken: set[str],
           at_s: float, until_s: float, rng3: random.Random | None = None
           ) -> dict[str, Any] | None:
    hosts = [h.name for h in topo.hosts if h.name not in taken]
    links = [ln.id for ln in topo.links if ln.id not in taken and "#" not in ln.id]
    params: dict[str, Any] = {}
    target: Any
    if kind in HOST_FAULTS:
        if not hosts:
            return None
        target = rng.choice(hosts)
        if kind == FAULT_PFC_STORM:
            params = {"priority": 3}
        elif kind == FAULT_INCAST:
            params = {"fan_in": rng.randint(2, min(12, len(topo.hosts) - 1))}
        else:
            params = {"drain_fraction": round(rng.uniform(0.1, 0.5), 2)}
    elif kind in LINK_FAULTS:
        if not links:
            return None
        target = rng.choice(links)
        agg_links = [ln for ln in links if ln.startswith("agg")]
        if rng3 is not None and agg_links and rng3.random() < 0.5:
            target = rng3.choice(agg_links)
        if kind == FAULT_LINK_CORRUPTION:
            params = {"rate": float(f"{10 ** rng.uniform(-6, -3):.2g}"),
                      "direction": rng.choice(("a_to_b", "b_to_a", "both"))}
        elif kind == FAULT_LINK_FLAP:
            period = rng.randint(10, 20)
            params = {"period_s": period, "down_s": rng.randint(2, min(5, period - 1))}
        elif kind == FAULT_OPTICS_DEGRADE:
            params = {"start_rate": float(f"{10 ** rng.uniform(-8, -7):.2g}"),
                      "end_rate": float(f"{10 ** rng.uniform(-5, -4):.2g}")}
    elif kind == FAULT_ECMP_COLLISION:
        target = rng.choice([leaf for leaf in topo.leaves if leaf not in taken] or topo.leaves)
        params = {"flows": rng.randint(4, 12)}
        if rng3 is not None and rng3.random() < 0.5:
            # a spine's flows collide on its aggregation uplinks
            target = rng3.choice([sp for sp in topo.spines if sp not in taken] or topo.spines)
            params = {"flows": rng3.randint(8, 24)}
    elif kind == FAULT_BUFFER_MISCONFIG:
        target = rng.choice([s for s in topo.switches if s not in taken] or topo.switches)
        params = {"xoff_fraction": round(rng.uniform(0.05, 0.4), 2)}
        if rng3 is not None and rng3.random() < 0.3:
            target = rng3.choice(topo.aggs)
        if rng3 is not None and topo.role(str(target)) == "spine":
            # a deep-buffer spine needs a far smaller fraction to be misconfigured
            params = {"xoff_fraction": round(rng3.uniform(0.002, 0.01), 4)}
    else:  # pfc_deadlock
        cycle = _cycle(rng, topo, rng3)
        target = rng.choice(cycle)
        params = {"cycle": cycle}
    taken.add(str(target))
    fault: dict[str, Any] = {"kind": kind, "target": target, "at_s": at_s, "until_s": until_s}
    if params:
        fault["params"] = params
    return fault


def _topology_fault(rng: random.Random, topo: Topology, taken: set[str], end: float
                    ) -> dict[str, Any] | None:
    """A miswire or a dropped LLDP neighbour, now and then, from a stream of its own, within
    the scenario's other windows (its duration stays what it was)."""
    if rng.random() >= TOPOLOGY_SHARE:
        return None
    links = [ln.id for ln in topo.links if ln.id not in taken]
    if len(links) < 2:
        return None
    kind = rng.choice(sorted(TOPOLOGY_FAULTS))
    target, other = rng.sample(links, 2)
    params: dict[str, Any] = ({"swap_with": other} if kind == FAULT_MISWIRED_CABLE else
                              {"side": rng.choice(("a", "b", "both"))})
    at = float(rng.randint(20, 40))
    until = min(at + rng.randint(40, 60), float(end))
    taken.add(target)
    return {"kind": kind, "target": target, "at_s": at, "until_s": until, "params": params}


def generate(seed: int, index: int) -> dict[str, Any]:
    """The ``index``-th scenario of a seed's series."""
    rng = random.Random(seed * 100_003 + index)
    fabric = _fabric(rng)
    draw3 = random.Random(f"three-tier {seed} {index}")
    rng3 = draw3 if draw3.random() < THREE_TIER_SHARE else None
    if rng3 is not None:
        _three_tier(rng3, fabric)
    topo = _topology(fabric)
    routing = rng.choice(("ecmp", "eecmp", "pinned", "te"))
    interval = rng.choice((0.5, 1, 1, 1, 2))
    count = rng.choices((0, 1, 2), weights=(0.15, 0.6, 0.25))[0]
    faults: list[dict[str, Any]] = []
    taken: set[str] = set()
    t = float(rng.randint(30, 45))
    for _ in range(count):
        kind = rng.choice(FORMAT_FAULT_KINDS)
        span = 80.0 if kind == FAULT_OPTICS_DEGRADE else float(rng.randint(30, 50))
        fault = _fault(rng, kind, topo, taken, t, t + span, rng3)
        if fault is not None:
            faults.append(fault)
            # a second fault either overlaps the first or follows it
            t = t + (rng.uniform(5, 15) if rng.random() < 0.4 else span + 20)
    end = max([f["until_s"] for f in faults], default=t + 60)
    topology = _topology_fault(random.Random(f"topology {seed} {index}"), topo, taken, end)
    if topology is not None:
        faults.append(topology)
    return {
        "format": 1,
        "name": f"random-{seed}-{index:03d}",
        "seed": seed * 1000 + index,
        "duration_s": int(end + 20),
        "sample_interval_s": interval,
        "fabric": fabric,
        "routing": routing,
        "traffic": _traffic(rng, topo.leaves[0]),
        "faults": faults,
    }


def write(folder: Path, seed: int, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        doc = generate(seed, i)
        path = folder / f"{doc['name']}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
        paths.append(path)
    return paths
