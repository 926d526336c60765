"""``rocewatch bench fabric``: a whole fabric through the real path, the platform metered apart.

The source (:mod:`rocewatch.bench.fabric_source`: the lab simulating the whole fabric, its gNMI
targets served by shard processes from the lab's snapshot ring) and the platform
(:mod:`rocewatch.bench.fabric_platform`: every role in one process, on the in-process bus and the
embedded store, remediation in dry-run, a webhook receiver here) each run in processes of their
own, so the platform's CPU is measured apart from the source's. Time is the simulation's: the lab
runs as fast as it can up to ``--speed``, and every rate is per simulated second.

The run: start the source, then the platform; wait for every target to be up; mark; let the
three faults of :mod:`rocewatch.bench.fabric_plan` happen; wait for detection to reach the end;
report; time the API's fabric reads. :func:`run_fabric` returns everything measured (the test
runs it small and checks what was found); the command prints it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from pipeline.config import merge
from remediation.alerting.routing import DEFAULT_GROUP_WAIT_S
from rocewatch.bench.fabric_meter import STAGES
from rocewatch.bench.fabric_plan import RESIZE, Hook, findings, plan_scenario
from rocewatch.bench.fabric_platform import PLATFORM_CHILD, Pace
from rocewatch.bench.fabric_source import fabric_source
from rocewatch.bench.peers import Peer

REFERENCE = Path(__file__).resolve().parents[2] / "lab" / "reference" / "reference-24k.yaml"
_TICK = os.sysconf("SC_CLK_TCK")
API_CASES: list[tuple[str, str, dict[str, Any]]] = [("status", "/v1/status", {}),
                                                    ("fabric view", "/v1/fabric", {})]


def pid_cpu(pid: int) -> float:
    """A process's CPU seconds (all its threads), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _wait(what: str, ready: Any, timeout_s: float, every_s: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = ready()
        if got:
            return got
        if time.monotonic() > deadline:
            raise click.ClickException(f"bench fabric: {what} within {timeout_s:.0f} s")
        time.sleep(every_s)


def _up(platform: Peer) -> tuple[int, int]:
    """Targets up and in all, over every collector."""
    health = platform.ask(json.dumps({"do": "health"}))
    cols = [v for k, v in health.items() if k.startswith("collector.")]
    return (sum(int(c.get("targets_up") or 0) for c in cols),
            sum(int(c.get("targets_total") or 0) for c in cols))


def _wait_up(platform: Peer, timeout_s: float) -> tuple[int, int]:
    """Until every target is up, or ``timeout_s``: then the run goes on with those up (the
    report says how many), since a loaded machine may leave a few connecting for long."""
    deadline = time.monotonic() + timeout_s
    while True:
        up, total = _up(platform)
        if (total and up == total) or time.monotonic() > deadline:
            if not up:
                raise click.ClickException(f"bench fabric: no target up in {timeout_s:.0f} s")
            return up, total
        time.sleep(0.5)


def run_fabric(scenario: Path = REFERENCE, resize: dict[str, int] | None = None,
               interval_s: float | None = None, speed: float = 1.0, dt: float = 0.1,
               tick_s: float = 1.0, procs: int = 1, queues: str = "active",
               fault_at: float = 6.0, gap: int = 6, up_timeout_s: float = 600.0,
               catch_up_s: float = 120.0, api_runs: int = 3,
               group_wait_s: float | None = None,
               work: Path | None = None) -> dict[str, Any]:
    """Run the benchmark once; everything measured, as one document."""
    from lab.scenario.load import load_scenario

    work = work or Path(tempfile.mkdtemp(prefix="rocewatch-bench-fabric-"))
    work.mkdir(parents=True, exist_ok=True)
    path, faults = plan_scenario(scenario, work, resize or {}, interval_s, fault_at, gap,
                                 DEFAULT_GROUP_WAIT_S if group_wait_s is None else group_wait_s)
    route = {} if group_wait_s is None else {"route": {"group_wait": f"{group_wait_s:g}s"}}
    plan = load_scenario(path)
    interval = float(plan.sample_interval_s)
    topology = plan.topology()
    (work / "topology.json").write_text(json.dumps(topology.to_json()))
    t_start = time.monotonic()
    with Hook() as hook, fabric_source(path, work, speed, dt, tick_s, procs, queues) as source:
        agents = source.write_agents(work / "agents.json")
        settings = merge(_platform_settings(work, agents, source.te_url), {
            "remediation": {"receivers": [{"type": "webhook", "name": "bench",
                                           "url": hook.url, "attempts": 2}], **route}})
        cfg = {"epoch_ns": source.epoch_ns, "block": source.block, "size": source.size,
               "slots": source.slots, "topology": str(work / "topology.json"),
               "settings": settings}
        (work / "platform.json").write_text(json.dumps(cfg))
        pace = Pace(source.block, source.size, source.slots)
        platform = Peer(PLATFORM_CHILD, str(work / "platform.json"))
        try:
            targets_up = _wait_up(platform, up_timeout_s)
            up_wall_s = time.monotonic() - t_start
            up_sim_s = pace.sim_s()
            # two intervals for the first samples of every series to be in
            _wait("two intervals", lambda: pace.sim_s() >= up_sim_s + 2 * interval,
                  up_timeout_s, 0.2)
            marked = platform.ask(json.dumps({"do": "mark"}))["marked"]
            source0 = {name: pid_cpu(pid) for name, pid in source.pids.items()}
            wall0 = time.monotonic()
            _wait("the simulation past the last fault", lambda: pace.sim_s() >= faults.end_s,
                  24 * 3600, 0.5)
            want_ns = source.epoch_ns + int((faults.end_s - 1.5 * interval) * 1e9)
            # bounded: a detection that cannot catch up is reported as behind, not waited for
            deadline = time.monotonic() + catch_up_s
            while time.monotonic() < deadline and int(platform.ask(json.dumps(
                    {"do": "health"})).get("detect", {}).get("now_ns") or 0) < want_ns:
                time.sleep(0.5)
            report = platform.ask(json.dumps({"do": "report", "first_wall": hook.first}))
            source_cpu = {name: pid_cpu(pid) - source0[name]
                          for name, pid in source.pids.items()}
            source_wall = time.monotonic() - wall0
            api = platform.ask(json.dumps({"do": "api", "cases": API_CASES, "runs": api_runs}))
        finally:
            platform.close(120)
            pace.close()
    truth = plan.truth()
    return {
        "scenario": plan.name, "switches": len(topology.switches),
        "ports": topology.n_switch_ports, "hosts": len(topology.hosts),
        "interval_s": interval, "speed": speed, "dt": dt, "tick_s": tick_s, "procs": procs,
        "queues": queues, "group_wait_s": group_wait_s, "up_wall_s": up_wall_s,
        "up_sim_s": up_sim_s, "marked_sim_s": marked, "targets_up": targets_up,
        "faults": faults.entries(), "truth": truth, "report": report,
        "source_cpu": source_cpu, "source_wall_s": source_wall, "hook_posts": hook.posts,
        "findings": findings(report, truth, interval), "api": api, "work": str(work),
    }


def _platform_settings(work: Path, agents: Path, te_url: str) -> dict[str, Any]:
    """The scenario runner's own platform configuration (collectors over the agents, memory
    bus, embedded store, API on a free port), in a store directory of this run."""
    from rocewatch.scenario.runner import platform_config

    protocols = {p for s in json.loads(agents.read_text())["switches"]
                 for p in ("gnmi", "snmp") if s.get(p)}
    return platform_config(None, work, agents, te_url, protocols or {"gnmi"},
                           work / "chdb", "fabric")


def _f(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def render(r: dict[str, Any]) -> str:
    """The measurement as the table docs/benchmarks.md keeps."""
    rep = r["report"]
    sim = rep["sim_s"]
    cpu = rep["cpu"]
    lines = [
        f"scenario {r['scenario']}: {r['switches']:,} switches, {r['ports']:,} switch ports, "
        f"{r['hosts']:,} hosts; {r['interval_s']:g} s cadence; queues {r['queues']}; "
        f"lab speed x{r['speed']:g} (dt {r['dt']:g} s, tick {r['tick_s']:g} s), "
        f"{r['procs']} target shard(s); {r['targets_up'][0]:,} of {r['targets_up'][1]:,} "
        f"collector targets up after {r['up_wall_s']:.1f} s wall "
        f"(simulated {r['up_sim_s']:.1f} s; first fault at {r['faults'][0]['at_s']:g} s)",
        f"window: {sim:.1f} simulated s in {rep['wall_s']:.1f} wall s "
        f"(x{sim / rep['wall_s']:.2f} of real time); collected {rep['collected']:,} samples "
        f"({rep['collected'] / sim:,.0f}/s), stored {rep['stored']:,} "
        f"({rep['stored'] / sim:,.0f}/s); bus dropped {rep['bus_dropped']}, "
        f"undecodable {rep['undecodable']}",
        "",
        "| stage | CPU s / simulated s | samples/s | lag p50 / p99 / max (s) |",
        "|---|---|---|---|",
    ]
    rows = {"collect": rep["collected"], **rep["rows"]}
    for stage in STAGES:
        lag = rep["lags"].get(stage)
        n = rows.get(stage)
        lines.append(f"| {stage} | {cpu.get(stage, 0.0) / sim:.3f} | "
                     f"{_f(None if n is None else n / sim, 0)} | "
                     + ("-" if not lag else
                        f"{lag['p50']:.2f} / {lag['p99']:.2f} / {lag['max']:.2f}") + " |")
    other = sum(cpu.get(k, 0.0) for k in ("platform", "unnamed", "ended"))
    lines += [
        f"| other (watchdog, unnamed, ended threads) | {other / sim:.3f} | | |",
        f"| **platform total** (process) | **{cpu['total'] / sim:.3f}** | | |",
        f"| benchmark's own threads (not the platform's) | {cpu.get('bench', 0.0) / sim:.3f} "
        f"| | |",
    ]
    for name, used in sorted(r["source_cpu"].items()):
        lines.append(f"| source: {name} | {used / sim:.3f} | | |")
    heavy = max((s for s in STAGES), key=lambda s: cpu.get(s, 0.0))
    lines += [
        "",
        f"platform RSS {rep['rss_mib'].get('VmRSS', 0):,.0f} MiB (peak "
        f"{rep['rss_mib'].get('VmHWM', 0):,.0f}); detection {rep['detect_behind_s']:.1f} s "
        f"behind the devices at the end; bottleneck stage: {heavy}",
        f"kept: the store holds {_f(rep['kept']['store_rows'], 0)} sample rows for "
        f"{rep['kept']['committed_rows']:,} committed by ingest; samples messages over 30 s "
        f"old not committed, per group: {rep['kept']['stale']}; dead letters "
        f"{rep['ingest'].get('dead_letters', {}).get('parked')}; notifications posted "
        f"{r['hook_posts']}",
        "",
        "| injected fault | target | found (right entity) | time to detect (intervals) | "
        "time to notify (simulated s) |",
        "|---|---|---|---|---|",
    ]
    for f in r["findings"]:
        lines.append(f"| {f['kind']} | {f['target']} | {'yes' if f['found'] else 'NO'} | "
                     f"{_f(f['ttd_intervals'])} | {_f(f['notify_s'], 1)} |")
    if r["up_sim_s"] > r["faults"][0]["at_s"]:
        lines.append(f"WARNING: the platform was up only after the first fault began; its "
                     f"times to detect include start-up (raise --fault-at above "
                     f"{r['up_sim_s'] / r['interval_s']:.0f})")
    lines += ["", "| API read | p50 ms | max ms | KiB | status |", "|---|---|---|---|---|"]
    for title, c in r["api"]["cases"].items():
        lines.append(f"| {title} | {c['p50_ms']:.0f} | {c['max_ms']:.0f} | {c['kib']:.0f} | "
                     f"{c['status']} |")
    return "\n".join(lines)


@click.command("fabric")
@click.option("--scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=REFERENCE, show_default=True, help="the fabric (its faults are replaced)")
@click.option("--zones", type=int, default=0, help="resize the fabric (0: the scenario's)")
@click.option("--spines", type=int, default=0)
@click.option("--leaves", type=int, default=0)
@click.option("--hosts-per-leaf", type=int, default=0)
@click.option("--aggs", type=int, default=0)
@click.option("--interval", type=float, default=None, help="sample cadence, s (scenario's)")
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="the lab's target speed (it goes slower when it cannot keep up)")
@click.option("--dt", type=float, default=0.1, show_default=True, help="simulation step, s")
@click.option("--tick", type=float, default=1.0, show_default=True, help="snapshot tick, s")
@click.option("--source-procs", type=int, default=1, show_default=True,
              help="processes serving the gNMI targets")
@click.option("--queues", type=click.Choice(["active", "all"]), default="active",
              show_default=True, help="the queues each port serves")
@click.option("--fault-at", type=float, default=6.0, show_default=True,
              help="first fault, in intervals of simulated time")
@click.option("--gap", type=int, default=6, show_default=True,
              help="intervals between the faults")
@click.option("--up-timeout", type=float, default=600.0, show_default=True,
              help="wall seconds to wait for every target up (then go on with those up)")
@click.option("--group-wait", type=float, default=None,
              help="the notification route's group_wait, s (default: the platform's)")
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None)
def fabric(scenario: Path, zones: int, spines: int, leaves: int, hosts_per_leaf: int, aggs: int,
           interval: float | None, speed: float, dt: float, tick: float, source_procs: int,
           queues: str, fault_at: float, gap: int, up_timeout: float, group_wait: float | None,
           json_out: Path | None) -> None:
    """A whole fabric through collect → bus → store → detect → remediate → API, metered."""
    sizes = (zones, spines, leaves, hosts_per_leaf, aggs)
    r = run_fabric(scenario, dict(zip(RESIZE, sizes, strict=True)), interval, speed, dt, tick,
                   source_procs, queues, fault_at, gap, up_timeout_s=up_timeout,
                   group_wait_s=group_wait)
    if json_out is not None:
        json_out.write_text(json.dumps(r, indent=1, default=str))
    click.echo(render(r))
