"""What a simulated second costs: the simulator alone, stage by stage, on any fabric.

``rocewatch lab bench --scenario FILE --sim-only`` runs the scenario's :class:`Simulation` flat out
in this process for a while and reports how long building the fabric took (scenario, topology,
wiring, simulation), and the CPU time per simulated second of each stage of the loop: the fluid
step (:meth:`Physics.step`, forward and PFC passes), the statistics ticks, and producing the
published snapshot (what the simulator process copies into shared memory every tick). The largest
stage is the bottleneck; ``docs/lab.md`` has the numbers of the 24,576-GPU reference fabric.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lab.buffers import BufferProfile
from lab.runner import published_layout
from lab.scenario.load import load_scenario
from lab.scenario.spec import Scenario
from lab.sim.simulation import DEFAULT_DT, DEFAULT_TICK, Simulation
from lab.wiring import build_wiring


def measure(scenario: Scenario | str | Path, seconds: float = 20.0, dt: float = DEFAULT_DT,
            tick_s: float = DEFAULT_TICK) -> dict[str, Any]:
    """Build the fabric, then step it for about ``seconds`` of wall time; CPU per stage."""
    c0 = time.process_time()
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    c1 = time.process_time()
    topo = sc.topology()
    c2 = time.process_time()
    wiring = build_wiring(topo)
    c3 = time.process_time()
    sim = Simulation(sc, dt=dt, tick_s=tick_s, profile=True)
    c4 = time.process_time()
    layout = published_layout(sc, sim.wiring, BufferProfile())
    publish = 0.0
    wall0 = time.monotonic()
    t0 = sim.t
    while time.monotonic() - wall0 < seconds and not sim.done:
        sim.step()
        if sim.steps % sim.tick_steps == 0:
            a = time.process_time()
            sim.counters.published(layout)
            publish += time.process_time() - a
    wall = time.monotonic() - wall0
    simulated = sim.t - t0
    cpu = {**sim.cpu, "publish": publish}
    per_sim_s = {k: v / simulated for k, v in cpu.items()}
    total = sum(per_sim_s.values())
    return {
        "scenario": sc.name, "switches": len(topo.switches), "hosts": len(topo.hosts),
        "switch_ports": topo.n_switch_ports, "channels": wiring.n_ports,
        "entries": len(sim.entries), "units": len(sim.physics.prio),
        "snapshot_mb": layout.size * 8 / 1e6, "dt": dt, "tick_s": sim.tick_s,
        "build_s": {"scenario": c1 - c0, "topology": c2 - c1, "wiring": c3 - c2,
                    "simulation": c4 - c3},
        "simulated_s": simulated, "wall_s": wall,
        "cpu_per_sim_s": per_sim_s, "cpu_per_sim_s_total": total,
        "realtime_factor": 1.0 / total if total > 0 else float("inf"),
        "bottleneck": max(per_sim_s, key=lambda k: per_sim_s[k]),
    }


def format_cost(r: dict[str, Any]) -> str:
    b = r["build_s"]
    per = r["cpu_per_sim_s"]
    return "\n".join([
        f"scenario {r['scenario']}: {r['switches']:,} switches, {r['hosts']:,} hosts, "
        f"{r['switch_ports']:,} switch ports ({r['channels']:,} channels with the NICs), "
        f"{r['entries']:,} flow-QP entries simulated as {r['units']:,} units; published "
        f"snapshot {r['snapshot_mb']:.1f} MB",
        f"build (CPU s): scenario {b['scenario']:.2f}, topology {b['topology']:.2f}, "
        f"wiring {b['wiring']:.2f}, simulation {b['simulation']:.2f}",
        f"dt {r['dt'] * 1e3:g} ms, tick {r['tick_s'] * 1e3:g} ms: {r['simulated_s']:.2f} "
        f"simulated s in {r['wall_s']:.1f} wall s",
        f"CPU per simulated second: step {per['step']:.3f} s, statistics ticks "
        f"{per['tick']:.3f} s, snapshot {per['publish']:.3f} s; total "
        f"{r['cpu_per_sim_s_total']:.3f} s: x{r['realtime_factor']:.2f} real time on one core "
        f"(bottleneck: {r['bottleneck']})",
    ])
