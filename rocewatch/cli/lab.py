"""``rocewatch lab ...``: run a scenario's simulated fabric, print its topology, measure it.

The group is mounted by ``rocewatch/cli/main.py``; standalone:
``python -c "from rocewatch.cli.lab import lab; lab()" run SCENARIO``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from pipeline.errors import RocewatchError


class _Failed(click.ClickException):
    exit_code = 1


class _BadInput(click.ClickException):
    exit_code = 2


def _fail(exc: RocewatchError) -> click.ClickException:
    """A RocewatchError as a click error, keeping its exit code (2 for bad input)."""
    return (_BadInput if exc.exit_code == 2 else _Failed)(str(exc))


@click.group()
def lab() -> None:
    """The simulated RoCE fabric: real gNMI/SNMP agents, faults, a TE controller."""


@lab.command()
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--speed", type=float, default=10.0, show_default=True,
              help="simulated seconds per wall second")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("var/lab"), show_default=True,
              help="where topology.json, agents.json and truth.json go")
@click.option("--base-port", type=int, default=0, show_default=True,
              help="TE controller port; switch i gets base+1+i (0: free ports)")
@click.option("--tls", type=click.Choice(["none", "tls", "mtls"]), default="none",
              show_default=True, help="gNMI transport security")
@click.option("--snmp-version", type=click.Choice(["2c", "3"]), default="2c", show_default=True,
              help="what agents.json tells collectors to use (agents accept both)")
@click.option("--dcqcn/--no-dcqcn", default=False, show_default=True,
              help="senders react to ECN marks (off: PFC-only, as Meta runs at 400G)")
def run(scenario: Path, speed: float, out_dir: Path, base_port: int, tls: str,
        snmp_version: str, dcqcn: bool) -> None:
    """Serve SCENARIO's fabric until it ends or Ctrl-C."""
    from lab.runtime import Lab

    try:
        the_lab = Lab(scenario, speed=speed, out_dir=out_dir, base_port=base_port,
                      tls=None if tls == "none" else tls, snmp_version=snmp_version,
                      dcqcn=dcqcn)
        the_lab.start()
    except RocewatchError as exc:
        raise _fail(exc) from exc
    stop = {"now": False}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop["now"] = True

    old = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        _print_inventory(the_lab.agents(), out_dir)
        duration = the_lab.scenario.duration_s
        last = -float("inf")
        while not stop["now"] and not the_lab.finished:
            now = the_lab.sim_time()
            if now - last >= 10.0:
                click.echo(f"t={now:7.1f}s / {duration:g}s", err=True)
                last = now
            time.sleep(0.2)
        click.echo("scenario finished" if the_lab.finished else "stopped", err=True)
    except RocewatchError as exc:
        raise _fail(exc) from exc
    finally:
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)
        the_lab.stop()


def _print_inventory(doc: dict[str, Any], out_dir: Path) -> None:
    click.echo(f"scenario {doc['scenario']}: {len(doc['switches'])} switches, "
               f"speed x{doc['speed']:g}, epoch_ns {doc['epoch_ns']}")
    click.echo(f"TE controller  {doc['te_controller']}")
    for sw in doc["switches"]:
        if sw["gnmi"]:
            g = sw["gnmi"]
            tls = " tls" if g["tls"] else ""
            click.echo(f"{sw['name']:<10} gnmi  {g['address']:<22} {g['profile']}{tls}")
        else:
            s = sw["snmp"]
            click.echo(f"{sw['name']:<10} snmp  {s['address']:<22} v{s['version']}")
    click.echo(f"inventory      {out_dir / 'agents.json'}")
    sys.stdout.flush()


@lab.command()
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def topology(scenario: Path) -> None:
    """Print SCENARIO's topology as JSON."""
    from lab.scenario.load import load_scenario

    try:
        topo = load_scenario(scenario).topology()
    except RocewatchError as exc:
        raise _fail(exc) from exc
    click.echo(json.dumps(topo.to_json(), indent=2))


@lab.command()
@click.option("--speed", type=float, default=10.0, show_default=True)
@click.option("--seconds", type=float, default=30.0, show_default=True,
              help="wall seconds to measure for")
@click.option("--scenario", "scenario_path", type=click.Path(exists=True, dir_okay=False,
                                                               path_type=Path),
              default=None, help="default: 4 spines x 16 leaves x 128 hosts, all gNMI")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("var/lab-bench"), show_default=True)
@click.option("--in-process", is_flag=True,
              help="run the simulator as a thread of the agents' process (to compare)")
@click.option("--agents", type=int, default=None,
              help="run agents on a sample of this many switches (the whole fabric is simulated)")
@click.option("--dt", type=float, default=None, help="simulation step, s (default 0.01)")
@click.option("--tick", "tick_s", type=float, default=None,
              help="statistics tick and snapshot period, simulated s (default 0.1)")
@click.option("--sim-only", is_flag=True,
              help="no agents: the simulator alone, flat out, CPU per simulated second by stage")
@click.option("--json", "as_json", is_flag=True, help="print the raw numbers as JSON")
def bench(speed: float, seconds: float, scenario_path: Path | None, out_dir: Path,
          in_process: bool, agents: int | None, dt: float | None, tick_s: float | None,
          sim_only: bool, as_json: bool) -> None:
    """Measure the simulated speed reached with every gNMI agent streaming to a subscriber."""
    from lab.bench import BENCH_SCENARIO, format_bench, run_bench
    from lab.scenario.load import load_scenario, parse_scenario
    from lab.sim.cost import format_cost, measure

    try:
        sc = load_scenario(scenario_path) if scenario_path else None
        if sim_only:
            result = measure(scenario_path or parse_scenario(BENCH_SCENARIO), seconds=seconds,
                             **{k: v for k, v in (("dt", dt), ("tick_s", tick_s)) if v})
            click.echo(json.dumps(result, indent=2) if as_json else format_cost(result))
            return
        result = run_bench(speed=speed, seconds=seconds, out_dir=out_dir, scenario=sc,
                           isolate=not in_process, agents=agents, dt=dt, tick_s=tick_s)
    except RocewatchError as exc:
        raise _fail(exc) from exc
    click.echo(json.dumps(result, indent=2) if as_json else format_bench(result))


@lab.command()
@click.option("--trials", type=int, default=20, show_default=True)
@click.option("--qps", type=int, default=4, show_default=True, help="queue pairs per flow")
@click.option("--spines", type=int, default=4, show_default=True)
@click.option("--leaves", type=int, default=8, show_default=True)
@click.option("--hosts-per-leaf", type=int, default=4, show_default=True)
@click.option("--message-mb", type=float, default=1000.0, show_default=True,
              help="bytes each rank sends per AllReduce step, in MB")
@click.option("--modes", default="ecmp,eecmp,pinned,te", show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--job-fraction", type=click.FloatRange(0.05, 1.0), default=1.0, show_default=True,
              help="below 1, each trial's job runs on a random subset of the hosts")
@click.option("--zones", type=int, default=1, show_default=True,
              help="AI zones of spines x leaves (three tiers when > 1, with --aggs)")
@click.option("--aggs", type=int, default=0, show_default=True,
              help="aggregation switches joining the zones")
@click.option("--uplinks-per-pair", type=int, default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print the raw numbers as JSON")
def compare(trials: int, qps: int, spines: int, leaves: int, hosts_per_leaf: int,
            message_mb: float, modes: str, seed: int, job_fraction: float, zones: int,
            aggs: int, uplinks_per_pair: int, as_json: bool) -> None:
    """AllReduce completion times under each routing mode (the Meta RoCE observations)."""
    from lab.compare import MODES, CompareSpec, format_table, run_compare

    chosen = tuple(m.strip() for m in modes.split(",") if m.strip())
    bad = [m for m in chosen if m not in MODES]
    if bad:
        raise click.BadParameter(f"unknown mode(s) {bad}; choose from {MODES}",
                                 param_hint="--modes")
    spec = CompareSpec(spines=spines, leaves=leaves, hosts_per_leaf=hosts_per_leaf, qps=qps,
                       message_bytes=message_mb * 1e6, trials=trials, seed=seed,
                       job_fraction=job_fraction, zones=zones, aggs=aggs,
                       uplinks_per_pair=uplinks_per_pair)
    try:
        result = run_compare(spec, chosen)
    except RocewatchError as exc:
        raise _fail(exc) from exc
    click.echo(json.dumps(result, indent=2) if as_json else format_table(result))
