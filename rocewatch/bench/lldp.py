"""``rocewatch bench collect --part gnmi-lldp``: what reading LLDP costs the gNMI collector.

The lab (gNMI switches in every dialect, in a child process) runs at ``speed``; one
``GnmiCollector`` in this process streams every switch's counters as usual and reads LLDP one way
per run, one run after the other against the same lab:

* ``off``: no LLDP (``lldp_interval_s: 0``): the floor;
* ``get``: a Get every ``lldp_interval_s`` (30 s of the device's clock), a reply decoded only when
  it changed (the profiles' ``lldp.rpc: get``);
* ``on_change``: one ON_CHANGE subscription per switch, a report when the table changes.

Each run waits for every switch up and its first LLDP report, then measures this process's CPU
and the lab process's over ``seconds`` of wall time, and the simulated time that passed meanwhile
(the newest sample's time: the lab slows down when the machine is busy). LLDP's cost is a run's
CPU above ``off``'s, per simulated second and per switch (the simulated second is what a real
fabric spends in a wall second).
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

import click
import yaml

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.profile import BUILTIN_DIR
from pipeline.model import SampleBatch
from pipeline.topology.neighbors import NeighborReport
from rocewatch.bench.peers import lab_process

LLDP_INTERVAL_S = 30.0
#: the dialects the lab serves over gNMI
DIALECTS = ("openconfig", "arista", "sonic")


def periodic_profiles(directory: Path) -> tuple[str, ...]:
    """A profile directory where every gNMI dialect the lab speaks is read with a Get every LLDP
    interval instead of streamed (``lldp.rpc: get``)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in DIALECTS:
        doc = yaml.safe_load((BUILTIN_DIR / f"{name}.yaml").read_text())
        doc["lldp"] = {**doc.get("lldp", {}), "rpc": "get"}
        (directory / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    return (str(directory),)


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_cpu() -> float:
    """CPU seconds of this process's running children (the lab), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _run(agents_file: Path, mode: str, seconds: float, speed: float,
         work: Path) -> dict[str, Any]:
    reports: list[NeighborReport] = []
    lock = threading.Lock()
    newest = [0]   # the newest sample's time: the lab's clock, however fast it really ran
    samples = [0]

    def emit(batch: SampleBatch) -> None:
        if len(batch.ts_ns):
            newest[0] = max(newest[0], int(batch.ts_ns.max()))
            samples[0] += len(batch.ts_ns)

    def take(report: NeighborReport) -> None:
        with lock:
            reports.append(report)

    options = GnmiOptions(agents=str(agents_file), flush_interval_s=0.25,
                          lldp_interval_s=0 if mode == "off" else LLDP_INTERVAL_S,
                          profile_dirs=periodic_profiles(work / "get") if mode == "get" else ())
    collector = GnmiCollector("bench-lldp", options, emit=emit)
    collector.emit_neighbors = take
    total = len(collector.targets)
    stop = threading.Event()
    thread = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (collector.health()["targets_up"] < total or (
            mode != "off" and len({r.device for r in reports}) < total)):
        time.sleep(0.1)
    time.sleep(2.0)
    with lock:
        first = len(reports)
    cpu0, lab0, sim0, samples0 = _own_cpu(), _children_cpu(), newest[0], samples[0]
    time.sleep(seconds)
    cpu, lab, sim_s = _own_cpu() - cpu0, _children_cpu() - lab0, (newest[0] - sim0) / 1e9
    rows = samples[0] - samples0
    with lock:
        made = len(reports) - first
    health = collector.health()["lldp"]
    stop.set()
    thread.join(30)
    return {"mode": mode, "targets": total, "speed": sim_s / seconds, "cpu_per_sim_s": cpu / sim_s,
            "lab_cpu_per_sim_s": lab / sim_s, "reports_per_sim_s": made / sim_s,
            "samples_per_sim_s": rows / sim_s,
            "reused": health["reused"], "errors": health["errors"]}


def lldp_cost(work: Path, seconds: float, speed: float, spines: int, leaves: int,
              hosts: int) -> None:
    """Print one row per way of reading LLDP, and LLDP's cost above the floor."""
    with lab_process(work, speed, spines=spines, leaves=leaves, hosts=hosts) as agents:
        agents_file = work / "agents.json"
        agents_file.write_text(json.dumps(agents))
        rows = [_run(agents_file, mode, seconds, speed, work)
                for mode in ("off", "get", "on_change")]
    floor = rows[0]
    click.echo(f"\nLLDP in the gNMI collector ({floor['targets']} lab switches, speed {speed:g}, "
               f"LLDP interval {LLDP_INTERVAL_S:g} s for get; {seconds:g} s wall each), "
               f"CPU s per simulated s:")
    click.echo(f"  {'mode':<10}{'speed':>6}{'collector':>10}{'LLDP':>9}{'per switch ms':>15}"
               f"{'lab':>8}{'LLDP at lab':>13}{'reports/sim s':>15}{'samples/sim s':>15}")
    for r in rows:
        extra = r["cpu_per_sim_s"] - floor["cpu_per_sim_s"]
        click.echo(f"  {r['mode']:<10}{r['speed']:>6.1f}{r['cpu_per_sim_s']:>10.4f}{extra:>9.4f}"
                   f"{extra / r['targets'] * 1e3:>15.3f}{r['lab_cpu_per_sim_s']:>8.3f}"
                   f"{r['lab_cpu_per_sim_s'] - floor['lab_cpu_per_sim_s']:>13.3f}"
                   f"{r['reports_per_sim_s']:>15.3f}{r['samples_per_sim_s']:>15,.0f}")
