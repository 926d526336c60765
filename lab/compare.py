"""The routing experiment behind ``rocewatch lab compare``: collective completion time per mode.

One trial is one ring AllReduce step on a fabric: every rank sends ``message_bytes`` to its
successor, split evenly over ``qps`` queue pairs, at line rate, through the full fluid model (PFC
included: a collided uplink pauses its senders). The collective completes when the last byte of
the last QP arrives. Trials differ by seed, which redraws what hashing depends on (the switches'
hash seeds, UDP source ports and QP numbers), the way different jobs land differently on a real
fabric. For each routing mode the experiment reports the completion-time distribution over
trials, normalised to the ideal (message size over line rate).

This reproduces the Meta RoCE paper's observations qualitatively (notes/anchors-papers.md §1.1):
5-tuple ECMP sees one hash key per connection however many QPs it has, so few heavy flows collide
on uplinks; E-ECMP hashes each QP, spreading the load; centralised TE places every QP on the
least-loaded path and so removes the spread between good and bad placements. On a three-tier
fabric (``zones``, ``aggs``) the ring crosses zones, so every hop adds the aggregation tier's two
hash decisions (a spine's aggregation uplink, an aggregation switch's spine in the destination
zone) to the leaf's and the spine's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.scenario.load import parse_scenario
from lab.sim.simulation import Simulation
from lab.te.cspf import plan_paths

MODES = ("ecmp", "eecmp", "pinned", "te")


@dataclass(frozen=True)
class CompareSpec:
    spines: int = 4
    leaves: int = 8
    hosts_per_leaf: int = 4
    gbps: float = 400.0
    qps: int = 4
    message_bytes: float = 1e9
    trials: int = 20
    seed: int = 1
    dt: float = 5e-4
    job_fraction: float = 1.0     # < 1: the job gets a random subset of hosts (fragmented)
    zones: int = 1                # > 1: AI zones of spines x leaves joined by ``aggs`` switches
    aggs: int = 0
    uplinks_per_pair: int = 1


@dataclass(frozen=True)
class ModeResult:
    mode: str
    cct_s: list[float]

    def summary(self, ideal_s: float) -> dict[str, float]:
        xs = sorted(self.cct_s)
        q = np.quantile(np.asarray(xs), [0.1, 0.5, 0.9])
        mean = statistics.fmean(xs)
        return {
            "mean_x_ideal": mean / ideal_s, "p10_x_ideal": float(q[0]) / ideal_s,
            "p50_x_ideal": float(q[1]) / ideal_s, "p90_x_ideal": float(q[2]) / ideal_s,
            "max_x_ideal": xs[-1] / ideal_s,
            "spread_p90_p10_x_ideal": float(q[2] - q[0]) / ideal_s,
        }


def run_trial(spec: CompareSpec, mode: str, seed: int) -> tuple[float, float]:
    """Completion time of one AllReduce step under ``mode``, and the spread between the first
    and the last rank to finish (simulated seconds)."""
    ideal = spec.message_bytes / (spec.gbps * 1e9 / 8)
    n_hosts = spec.zones * spec.leaves * spec.hosts_per_leaf
    hosts: Any = "all"
    if spec.job_fraction < 1.0:
        rng = np.random.default_rng([seed, 101])
        k = max(2, round(spec.job_fraction * n_hosts))
        hosts = [f"host{h + 1}" for h in sorted(rng.choice(n_hosts, size=k, replace=False))]
    sc = parse_scenario({
        "format": 1, "name": f"compare-{mode}-{seed}", "seed": seed,
        "duration_s": max(60.0, 50 * ideal), "sample_interval_s": 1,
        "fabric": {"spines": spec.spines, "leaves": spec.leaves,
                   "hosts_per_leaf": spec.hosts_per_leaf, "link_gbps": spec.gbps,
                   "host_gbps": spec.gbps, "uplinks_per_pair": spec.uplinks_per_pair,
                   **({"zones": spec.zones, "aggs": spec.aggs} if spec.aggs else {})},
        "routing": mode,
        "traffic": [{"pattern": "allreduce", "hosts": hosts, "load": 1.0,
                     "qps_per_flow": spec.qps}],
    })
    sim = Simulation(sc, dt=spec.dt, tick_s=spec.dt, jitter=False)
    entries = sim.entries
    size = spec.message_bytes * entries.share
    sim.set_transfer(size)
    if mode == "te":
        demand = sim.flows.bps[entries.flow] / 8.0 * entries.share
        plan = plan_paths(sim.wiring, entries, demand, np.ones(sim.wiring.n_links, dtype=bool))
        sim.set_te_paths(*plan.te_paths())
    finished = np.full(len(sim.flows), np.inf)
    n_flows = len(sim.flows)
    while not sim.done:
        sim.step()
        got = np.bincount(entries.flow, sim.physics.entry_delivered(), minlength=n_flows)
        done = (got >= spec.message_bytes * (1 - 1e-9)) & ~np.isfinite(finished)
        finished[done] = sim.t
    return sim.t, float(finished.max() - finished.min())


def run_compare(spec: CompareSpec, modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    ideal = spec.message_bytes / (spec.gbps * 1e9 / 8)
    results: dict[str, Any] = {"spec": spec.__dict__, "ideal_s": ideal, "modes": {}}
    for mode in modes:
        trials = [run_trial(spec, mode, spec.seed + i) for i in range(spec.trials)]
        ccts = [t for t, _ in trials]
        summary = ModeResult(mode, ccts).summary(ideal)
        summary["busbw_gbps"] = spec.message_bytes * 8 / 1e9 / statistics.fmean(ccts)
        summary["rank_skew_x_ideal"] = statistics.fmean(s for _, s in trials) / ideal
        results["modes"][mode] = {"cct_s": ccts, **summary}
    return results


def format_table(results: dict[str, Any]) -> str:
    spec = results["spec"]
    placement = (f"job on a random {spec['job_fraction']:.0%} of the hosts, "
                 if spec["job_fraction"] < 1 else "")
    fabric = (f"{spec['spines']} spines x {spec['leaves']} leaves x {spec['hosts_per_leaf']} "
              f"hosts")
    if spec["uplinks_per_pair"] > 1:
        fabric += f" ({spec['uplinks_per_pair']} uplinks per pair)"
    if spec["aggs"]:
        fabric = (f"{spec['zones']} zones of ({fabric}) joined by {spec['aggs']} aggregation "
                  f"switches")
    lines = [
        f"AllReduce ring, {fabric} at {spec['gbps']:g}G, {spec['qps']} QPs per flow, "
        f"{placement}{spec['message_bytes'] / 1e9:g} GB per rank, {spec['trials']} trials "
        f"(seeds {spec['seed']}..{spec['seed'] + spec['trials'] - 1})",
        f"ideal completion {results['ideal_s'] * 1e3:.2f} ms; times below are x ideal",
        "",
        f"{'mode':<8}{'mean':>8}{'p10':>8}{'p50':>8}{'p90':>8}{'max':>8}"
        f"{'p90-p10':>10}{'rank skew':>11}{'Gb/s/rank':>11}",
    ]
    for mode, r in results["modes"].items():
        lines.append(
            f"{mode:<8}{r['mean_x_ideal']:>8.2f}{r['p10_x_ideal']:>8.2f}{r['p50_x_ideal']:>8.2f}"
            f"{r['p90_x_ideal']:>8.2f}{r['max_x_ideal']:>8.2f}{r['spread_p90_p10_x_ideal']:>10.2f}"
            f"{r['rank_skew_x_ideal']:>11.2f}{r['busbw_gbps']:>11.1f}")
    return "\n".join(lines)
