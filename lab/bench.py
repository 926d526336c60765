"""The lab's performance benchmark behind ``rocewatch lab bench``.

It starts a lab (by default the issue's bar: 4 spines, 16 leaves, 128 hosts, every switch on gNMI
with the three dialects in rotation), then a separate client process that subscribes to every
switch the way a collector does (STREAM, SAMPLE at the scenario's 1 s interval, the dialect's full
counter set) and counts what arrives. It reports the simulated speed actually reached, the update
rate the agents delivered, the wall-clock cadence of notifications, and the CPU each part used.
Run the client in its own process so it does not share the agents' GIL, as a real collector
would not.

``python -m lab.bench AGENTS_JSON SECONDS`` is that client; it prints one JSON document.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb
from pygnmi.spec.v080 import gnmi_pb2_grpc as pb_grpc

from lab.gnmi import paths as gpath
from pipeline.kinds import FAULT_INCAST, FAULT_LINK_FLAP

SUBSCRIPTIONS = {
    "openconfig": [("", "openconfig", "/interfaces"), ("", "openconfig", "/qos")],
    "arista": [("", "openconfig", "/interfaces"), ("", "openconfig", "/qos")],
    "sonic": [("COUNTERS_DB", "", "/COUNTERS/Ethernet*"),
              ("COUNTERS_DB", "", "/COUNTERS/Ethernet*/Queues"),
              ("APPL_DB", "", "/PORT_TABLE/Ethernet*")],
}

BENCH_SCENARIO: dict[str, Any] = {
    "format": 1, "name": "bench-4x16x128", "seed": 42, "duration_s": 3600,
    "sample_interval_s": 1,
    "fabric": {"spines": 4, "leaves": 16, "hosts_per_leaf": 8,
               "profiles": ["openconfig", "arista", "sonic"]},
    "routing": "ecmp",
    "traffic": [{"pattern": "allreduce", "hosts": "all", "load": 0.6, "qps_per_flow": 4},
                {"pattern": "uniform", "hosts": "all", "load": 0.2, "qps_per_flow": 2}],
    "faults": [{"kind": FAULT_INCAST, "target": "host5", "at_s": 30, "until_s": 90,
                "params": {"fan_in": 12}},
               {"kind": FAULT_LINK_FLAP, "target": "leaf7~spine1", "at_s": 60,
                "params": {"period_s": 20, "down_s": 3}}],
}


# ---------------------------------------------------------------------------- the client


async def _stream(switch: dict[str, Any], seconds: float, interval_ns: int,
                  stats: dict[str, Any]) -> None:
    g = switch["gnmi"]
    md = (("username", g["username"]), ("password", g["password"]))
    # one RPC per DB target for SONiC (the target is part of the prefix)
    groups: dict[str, list[pb.Subscription]] = {}
    for db, origin, path in SUBSCRIPTIONS[g["profile"]]:
        p = gpath.to_pb(gpath.parse(path), origin=origin)
        groups.setdefault(db, []).append(
            pb.Subscription(path=p, mode=pb.SAMPLE, sample_interval=interval_ns))
    async with grpc.aio.insecure_channel(g["address"]) as channel:
        stub = pb_grpc.gNMIStub(channel)

        async def one(db: str, group: list[pb.Subscription]) -> None:
            req = pb.SubscribeRequest(subscribe=pb.SubscriptionList(
                prefix=pb.Path(target=db), subscription=group, mode=pb.SubscriptionList.STREAM,
                encoding=pb.PROTO if not db else pb.JSON_IETF))
            call = stub.Subscribe(iter([req]), metadata=md)
            deadline = time.monotonic() + seconds
            synced = False
            arrivals: dict[tuple[str, ...], list[float]] = {}
            stats["streams"].append(arrivals)
            async for resp in call:
                now = time.monotonic()
                if resp.sync_response:
                    synced = True
                    continue
                if not synced:
                    continue
                stats["notifications"] += 1
                stats["updates"] += len(resp.update.update)
                # one subscribed path per key: the first update's path, without list keys
                first = resp.update.update[0].path.elem if resp.update.update else ()
                arrivals.setdefault(tuple(e.name for e in first), []).append(now)
                stats["last_ts"] = max(stats["last_ts"], resp.update.timestamp)
                if now >= deadline:
                    call.cancel()
                    break

        await asyncio.gather(*(one(db, group) for db, group in groups.items()))


async def _client(doc: dict[str, Any], seconds: float) -> dict[str, Any]:
    interval_ns = int(doc["sample_interval_s"] * 1e9)
    per: dict[str, dict[str, Any]] = {}
    tasks = []
    for sw in doc["switches"]:
        if not sw["gnmi"]:
            continue
        st: dict[str, Any] = {"notifications": 0, "updates": 0, "streams": [], "last_ts": 0}
        per[sw["name"]] = st
        tasks.append(_stream(sw, seconds, interval_ns, st))
    t0 = time.monotonic()
    cpu0 = time.process_time()
    await asyncio.gather(*tasks)
    wall = time.monotonic() - t0
    gaps: list[float] = []
    for st in per.values():
        for rpc in st.pop("streams"):
            for arr in rpc.values():
                gaps.extend(b - a for a, b in itertools.pairwise(arr))
    return {"wall_s": wall, "client_cpu_s": time.process_time() - cpu0,
            "notifications": sum(s["notifications"] for s in per.values()),
            "updates": sum(s["updates"] for s in per.values()),
            "switches": len(per), "median_gap_s": sorted(gaps)[len(gaps) // 2] if gaps else 0.0,
            "per_switch": per}


def client_main(argv: list[str]) -> int:
    doc = json.loads(Path(argv[1]).read_text())
    print(json.dumps(asyncio.run(_client(doc, float(argv[2])))))
    return 0


# ---------------------------------------------------------------------------- the benchmark


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def sample_switches(topology: Any, count: int) -> list[str]:
    """``count`` switches spread evenly over topology order (aggregation, spines, leaves), so a
    sample of a big fabric has each tier in proportion."""
    switches = list(topology.switches)
    if count >= len(switches):
        return switches
    step = len(switches) / count
    return [switches[int(i * step)] for i in range(count)]


def run_bench(speed: float = 10.0, seconds: float = 30.0, out_dir: Path | None = None,
              scenario: Any = None, warmup_s: float = 3.0, isolate: bool = True,
              agents: int | None = None, dt: float | None = None,
              tick_s: float | None = None) -> dict[str, Any]:
    """The lab under a subscriber; ``agents`` runs agents on a sample of that many switches
    (the whole fabric is simulated), ``dt`` and ``tick_s`` override the simulation's step and
    statistics tick."""
    from lab.runtime import Lab
    from lab.scenario.load import parse_scenario
    from lab.sim.simulation import DEFAULT_DT, DEFAULT_TICK

    sc = scenario if scenario is not None else parse_scenario(BENCH_SCENARIO)
    out = out_dir or Path("var/lab-bench")
    chosen = sample_switches(sc.topology(), agents) if agents else None
    t_build = time.monotonic()
    lab = Lab(sc, speed=speed, out_dir=out, isolate=isolate, agents_for=chosen,
              dt=dt or DEFAULT_DT, tick_s=tick_s or DEFAULT_TICK)
    lab.start()
    start_s = time.monotonic() - t_build
    try:
        time.sleep(warmup_s)
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        sim_pid = lab.simulator_pid
        cpu_sim0 = _proc_cpu_s(sim_pid) if sim_pid else 0.0
        cpu_lab0 = time.process_time()
        sim0, wall0 = lab.sim_time(), time.monotonic()
        client = subprocess.run([sys.executable, "-m", "lab.bench", str(out / "agents.json"),
                                 str(seconds)], capture_output=True, text=True, env=env,
                                timeout=seconds + 120, check=True)
        wall = time.monotonic() - wall0
        sim_dt = lab.sim_time() - sim0
        cpu_lab = time.process_time() - cpu_lab0
        cpu_sim = (_proc_cpu_s(sim_pid) - cpu_sim0) if sim_pid else 0.0
        res = json.loads(client.stdout)
        served = sum(t.notifications_sent for t in lab.gnmi_targets().values())
        overrun = lab.view.overrun if lab.view else 0
    finally:
        lab.stop()
    res.pop("per_switch")
    return {
        "scenario": sc.name, "switches": res["switches"],
        "fabric_switches": len(lab.topology.switches), "start_s": start_s,
        "dt": lab.options.dt, "tick_s": lab.options.tick_s,
        "simulator": "process" if isolate else "thread",
        "ports": sum(len(lab.wiring.switch_ports[lab.wiring.device_index(p.switch)])
                     for p in lab.plans),
        "fabric_ports": lab.topology.n_switch_ports,
        "target_speed": speed, "achieved_speed": sim_dt / wall,
        "wall_s": wall, "sim_s": sim_dt,
        "notifications": res["notifications"], "updates": res["updates"],
        "updates_per_s": res["updates"] / res["wall_s"],
        "notifications_per_s": res["notifications"] / res["wall_s"],
        "median_gap_s": res["median_gap_s"],
        "expected_gap_s": sc.sample_interval_s / speed,
        "agents_notifications_sent": served, "snapshots_overrun": overrun,
        "cpu_simulator_pct": 100 * cpu_sim / wall, "cpu_agents_pct": 100 * cpu_lab / wall,
        "cpu_client_pct": 100 * res["client_cpu_s"] / wall,
        "loadavg": os.getloadavg(),
    }


def format_bench(r: dict[str, Any]) -> str:
    sample = ""
    if r["fabric_switches"] > r["switches"]:
        sample = (f" (agents on a sample of a fabric of {r['fabric_switches']:,} switches and "
                  f"{r['fabric_ports']:,} switch ports, all simulated)")
    return "\n".join([
        f"scenario {r['scenario']}: {r['switches']} gNMI switches, {r['ports']} switch ports"
        f"{sample}, simulator in its own {r['simulator']}; dt {r['dt'] * 1e3:g} ms, tick "
        f"{r['tick_s'] * 1e3:g} ms; lab up in {r['start_s']:.1f} s",
        f"speed: target x{r['target_speed']:g}, achieved x{r['achieved_speed']:.2f} "
        f"({r['sim_s']:.1f} simulated s in {r['wall_s']:.1f} wall s)",
        f"agents delivered {r['updates']:,} updates in {r['notifications']:,} notifications: "
        f"{r['updates_per_s']:,.0f} updates/s, {r['notifications_per_s']:.1f} notifications/s",
        f"notification cadence per subscribed path: median {r['median_gap_s'] * 1e3:.0f} ms "
        f"(expected {r['expected_gap_s'] * 1e3:.0f} ms); the agents sent "
        f"{r['agents_notifications_sent']:,} notifications in all, and missed "
        f"{r['snapshots_overrun']} snapshots",
        f"CPU: simulator {r['cpu_simulator_pct']:.0f}%, agents {r['cpu_agents_pct']:.0f}% "
        f"(the simulator is counted with the agents when it runs as a thread), "
        f"subscriber client {r['cpu_client_pct']:.0f}% (of one core); "
        f"load average {r['loadavg'][0]:.2f} on {os.cpu_count()} cores",
    ])


if __name__ == "__main__":
    raise SystemExit(client_main(sys.argv))
