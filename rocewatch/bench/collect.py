"""``rocewatch bench collect``: how fast the collectors turn device data into samples.

Three measurements, each printed with what it measured:

* **gNMI, recorded**: SubscribeResponses recorded from the lab's switches (one leaf per dialect,
  JSON_IETF, as the collector subscribes) are decoded to sample batches over and over by the
  collector's decoder; samples per CPU second of the decoding thread. For comparison, the same
  messages through pygnmi's dict conversion (``telemetryParser``), which stops at dicts.
* **gNMI, live**: the lab runs in a child process (its agents and simulator do not count against
  us); one GnmiCollector in this process subscribes to every switch; samples per wall second and
  per CPU second of this process (every thread: gRPC, sessions, decode, batching).
* **SNMP**: net-snmp's snmpd serving 64 veth interfaces in a network namespace (loopback's
  interfaces when not root); pollers of the SNMP collector walk it back to back from one asyncio
  loop; varbinds per wall second and per CPU second of this process (snmpd's CPU not counted).
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import platform
import resource
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from collectors.clocks import DeviceClock
from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import PathMapper
from collectors.gnmi.recording import Recording, record
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, SnmpProfile, load_profile
from pipeline.model import SampleBatch
from rocewatch.bench.lldp import lldp_cost
from rocewatch.bench.peers import REPLAY_CHILD, child, in_netns, lab_process, snmpd
from rocewatch.bench.scale import scale, snmp_scale
from rocewatch.bench.side_by_side import side_by_side


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def record_lab(agents: dict[str, Any], seconds: float) -> list[Recording]:
    """One leaf per dialect, recorded as the collector would subscribe."""
    out: dict[str, Recording] = {}
    for switch in agents["switches"]:
        gnmi = switch.get("gnmi")
        if not gnmi or switch["role"] != "leaf" or gnmi["profile"] in out:
            continue
        profile = load_profile(gnmi["profile"])
        assert isinstance(profile, GnmiProfile)
        out[gnmi["profile"]] = record(
            gnmi["address"], profile, switch["name"], seconds,
            interval_s=agents["sample_interval_s"],
            metadata={"username": gnmi["username"], "password": gnmi["password"]})
    return list(out.values())


# -- gNMI ------------------------------------------------------------------------------------


def decode_rate(rec: Recording, seconds: float) -> dict[str, float]:
    """Decode a recording repeatedly for ``seconds`` of this thread's CPU time."""
    profile = load_profile(rec.profile)
    assert isinstance(profile, GnmiProfile)
    health = TargetHealth(rec.device, "gnmi", "recorded", rec.profile, 1.0, DeviceClock())
    decoder = GnmiDecoder(rec.device, PathMapper(profile), health, ErrorTally("bench"))
    for message in rec.messages:  # warm the path cache, as a running collector has
        decoder.feed(message, 0.0)
    decoder.take()
    samples = messages = 0
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        for i, message in enumerate(rec.messages):
            decoder.feed(message, 0.0)
            if i % 16 == 15:  # a flush every few notifications, as the ticker does
                batch = decoder.take()
                samples += len(batch) if batch is not None else 0
        batch = decoder.take()
        samples += len(batch) if batch is not None else 0
        messages += len(rec.messages)
    cpu = time.thread_time() - start
    return {"samples": samples, "messages": messages, "cpu_s": cpu,
            "errors": float(health.error_total)}


def pygnmi_rate(rec: Recording, seconds: float) -> dict[str, float]:
    from pygnmi.client import telemetryParser
    from pygnmi.spec.v080 import gnmi_pb2 as pb

    messages = 0
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        for message in rec.messages:
            telemetryParser(pb.SubscribeResponse.FromString(message))
        messages += len(rec.messages)
    return {"messages": messages, "cpu_s": time.thread_time() - start}


def live_rate(options: GnmiOptions, seconds: float, warmup: float = 3.0) -> dict[str, float]:
    counted = {"samples": 0, "batches": 0}
    lock = threading.Lock()

    def emit(batch: SampleBatch) -> None:
        with lock:
            counted["batches"] += 1
            counted["samples"] += len(batch)

    collector = GnmiCollector("bench", options, emit=emit)
    stop = threading.Event()
    thread = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(warmup)  # sessions up and first snapshots in: the steady state is measured
    with lock:
        first = counted["samples"]
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    with lock:
        last = counted["samples"]
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    health = collector.health()
    threads = threading.active_count()
    stop.set()
    thread.join(30)
    return {"samples": last - first, "wall_s": wall, "cpu_s": cpu,
            "targets": float(len(health["targets"])), "up": float(health["targets_up"]),
            "threads": float(threads),
            "errors": float(sum(t["errors_total"] for t in health["targets"].values()))}


# -- SNMP ------------------------------------------------------------------------------------

async def _poll_back_to_back(ports: list[int], pollers: int,
                             seconds: float) -> dict[str, float]:
    from collectors.snmp.client import V2cChannel, V2cTarget
    from collectors.snmp.poll import SnmpPoller

    profile = load_profile("snmp")
    assert isinstance(profile, SnmpProfile)
    channel = V2cChannel(("127.0.0.1", 0))
    await channel.open()
    tally = ErrorTally("bench")
    workers = []
    for i in range(pollers):
        port = ports[i % len(ports)]
        health = TargetHealth(f"snmpd{i}", "snmp", f"127.0.0.1:{port}", "snmp", 1.0,
                              DeviceClock())
        client = V2cTarget(channel, ("127.0.0.1", port), "bench", 2.0, 1)
        workers.append(SnmpPoller(f"snmpd{i}", profile, client, health, tally, 50))
    for poller in workers:  # first poll: ifName cache and fallbacks settled
        await poller.poll()
    base = [(p.varbinds_total, p.health.samples_total) for p in workers]
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    end = wall0 + seconds

    async def loop(poller: SnmpPoller) -> None:
        while time.monotonic() < end:
            await poller.poll()

    await asyncio.gather(*(loop(p) for p in workers))
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    channel.close()
    return {"varbinds": sum(p.varbinds_total - b[0] for p, b in zip(workers, base, strict=True)),
            "samples": sum(p.health.samples_total - b[1]
                           for p, b in zip(workers, base, strict=True)),
            "wall_s": wall, "cpu_s": cpu, "errors": float(sum(p.health.error_total
                                                              for p in workers))}


# -- the command ------------------------------------------------------------------------------


@click.command()
@click.option("--part", "parts", multiple=True,
              type=click.Choice(["gnmi-recorded", "gnmi-live", "gnmi-replay", "gnmi-scale",
                                 "gnmi-lldp", "snmp", "snmp-scale", "peer"]),
              help="What to measure (repeatable; default: all).")
@click.option("--seconds", default=10.0, show_default=True, help="Measurement time per part.")
@click.option("--speed", default=20.0, show_default=True, help="Lab speed for gNMI parts.")
@click.option("--spines", default=4, show_default=True, help="Lab spines (live part).")
@click.option("--leaves", default=8, show_default=True, help="Lab leaves (live part).")
@click.option("--hosts-per-leaf", default=24, show_default=True, help="Lab hosts per leaf (live).")
@click.option("--recordings", type=click.Path(file_okay=False, path_type=Path),
              help="Decode these saved recordings instead of recording from a lab.")
@click.option("--save-recordings", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the recordings made from the lab here.")
@click.option("--snmp-pairs", default=32, show_default=True,
              help="veth pairs for snmpd to serve (needs root; 0 = loopback's interfaces).")
@click.option("--snmp-agents", default=2, show_default=True,
              help="snmpd processes (devices) to poll; snmpd is single-threaded.")
@click.option("--snmp-pollers", default=4, show_default=True,
              help="Concurrent pollers, spread over the agents.")
@click.option("--scale-targets", default="100,500,1000,2000", show_default=True,
              help="Target counts of the gnmi-scale curve (comma-separated).")
@click.option("--scale-interval", default=10.0, show_default=True,
              help="Sample interval (s) the gnmi-scale targets stream at (snmp-scale: poll).")
@click.option("--snmp-scale-targets", default="100,500,1000", show_default=True,
              help="Target counts of the snmp-scale curve (comma-separated).")
@click.option("--peer-command",
              help="peer part: another collector's command run beside ours against the same "
                   "lab switches ({addresses}, {targets_file}, {username}, {password}, "
                   "{interval} filled in); skipped when its program is not on PATH.")
@click.option("--compare-tree", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="gnmi-scale: also measure the collector of this checkout (e.g. `git archive "
                   "REV | tar -x -C DIR`) at each count, in the same run.")
@click.option("--profile", "profile_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a cProfile of the recorded-decode part here.")
def collect(parts: tuple[str, ...], seconds: float, speed: float, spines: int, leaves: int,
            hosts_per_leaf: int,
            recordings: Path | None, save_recordings: Path | None, snmp_pairs: int,
            snmp_agents: int, snmp_pollers: int, scale_targets: str, scale_interval: float,
            snmp_scale_targets: str, peer_command: str | None, compare_tree: Path | None,
            profile_out: Path | None) -> None:
    """Decoded gNMI updates/s per core (recorded and live) and SNMP varbinds/s."""
    parts = parts or ("gnmi-recorded", "gnmi-live", "gnmi-replay", "gnmi-scale", "gnmi-lldp",
                      "snmp", "snmp-scale", "peer")
    click.echo(f"rocewatch bench collect: {platform.python_implementation()} "
               f"{platform.python_version()}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="rw-bench-") as tmp:
        work = Path(tmp)
        if {"gnmi-recorded", "gnmi-replay", "gnmi-scale"} & set(parts):
            recs = _recordings(work, speed, recordings, save_recordings)
        if "gnmi-recorded" in parts:
            _recorded(recs, seconds, profile_out)
        if "gnmi-live" in parts:
            _live(work, seconds, speed, spines, leaves, hosts_per_leaf)
        if "gnmi-replay" in parts:
            _replay(work, recs, seconds)
        if "gnmi-scale" in parts:
            saved = save_recordings or work / "recordings"
            scale(work, [saved / f"{r.profile}.gnmirec" for r in recs],
                  [int(n) for n in scale_targets.split(",") if n.strip()], scale_interval,
                  max(seconds, 3 * scale_interval), compare_tree)
        if "gnmi-lldp" in parts:
            lldp_cost(work, seconds, speed, spines, leaves, hosts_per_leaf)
        if "snmp" in parts:
            _snmp(work, seconds, snmp_pairs, snmp_agents, snmp_pollers)
        if "snmp-scale" in parts:
            snmp_scale(work, [int(n) for n in snmp_scale_targets.split(",") if n.strip()],
                       scale_interval, max(seconds, 3 * scale_interval), snmp_agents)
        if "peer" in parts:
            side_by_side(work, peer_command, seconds, speed, spines, leaves, hosts_per_leaf)


def _recordings(work: Path, speed: float, recordings: Path | None,
                save: Path | None) -> list[Recording]:
    if recordings:
        recs = [Recording.load(p) for p in sorted(recordings.glob("*.gnmirec"))]
    else:
        with lab_process(work, speed, spines=4, leaves=4, hosts=28) as agents:
            recs = record_lab(agents, seconds=3.0)
    save = save or work / "recordings"
    save.mkdir(parents=True, exist_ok=True)
    for rec in recs:
        rec.save(save / f"{rec.profile}.gnmirec")
    return recs


def _recorded(recs: list[Recording], seconds: float, profile_out: Path | None) -> None:
    click.echo("\ngNMI decode of recorded SubscribeResponses (one lab leaf per dialect, "
               "JSON_IETF), CPU time of the decoding thread:")
    click.echo(f"  {'profile':<11}{'messages':>9}{'samples/msg':>12}{'pygnmi us/msg':>15}"
               f"{'ours us/msg':>13}{'samples/s/core':>16}")
    total_samples = total_cpu = 0.0
    profiler = cProfile.Profile() if profile_out else None
    for rec in recs:
        if profiler:
            profiler.enable()
        ours = decode_rate(rec, seconds / len(recs))
        if profiler:
            profiler.disable()
        theirs = pygnmi_rate(rec, min(2.0, seconds / len(recs) / 2))
        total_samples += ours["samples"]
        total_cpu += ours["cpu_s"]
        click.echo(f"  {rec.profile:<11}{len(rec.messages):>9}"
                   f"{ours['samples'] / ours['messages']:>12.0f}"
                   f"{theirs['cpu_s'] / theirs['messages'] * 1e6:>15.0f}"
                   f"{ours['cpu_s'] / ours['messages'] * 1e6:>13.0f}"
                   f"{ours['samples'] / ours['cpu_s']:>16,.0f}")
    click.echo(f"  all dialects: {total_samples / total_cpu:,.0f} samples/s per core")
    if profiler and profile_out:
        profiler.dump_stats(str(profile_out))


def _live(work: Path, seconds: float, speed: float, spines: int, leaves: int,
          hosts: int) -> None:
    with lab_process(work, speed, spines=spines, leaves=leaves, hosts=hosts) as agents:
        agents_file = work / "agents.json"
        agents_file.write_text(json.dumps(agents))
        result = live_rate(GnmiOptions(agents=str(agents_file), flush_interval_s=0.25), seconds)
    click.echo(f"\ngNMI live against the lab ({result['targets']:.0f} switches, "
               f"{result['up']:.0f} up at the end, speed {speed:g}, lab in another process), "
               f"whole collector process ({result['threads']:.0f} threads):")
    click.echo(f"  {result['samples'] / result['wall_s']:,.0f} samples/s wall, "
               f"{result['cpu_s'] / result['wall_s']:.2f} CPU cores busy, "
               f"{result['samples'] / max(result['cpu_s'], 1e-9):,.0f} samples per CPU second; "
               f"errors {result['errors']:.0f}")


def _replay(work: Path, recs: list[Recording], seconds: float, copies: int = 2) -> None:
    """Each dialect's recording served by ``copies`` targets; one collector subscribes to them."""
    os.environ.setdefault("ROCEWATCH_BENCH_USER", "bench")
    os.environ.setdefault("ROCEWATCH_BENCH_PASSWORD", "bench")
    click.echo(f"\ngNMI live against recorded streams served at full speed ({copies} targets "
               f"per dialect, in another process), whole collector process:")
    for rec in recs:
        path = work / "recordings" / f"{rec.profile}.gnmirec"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            rec.save(path)
        with child(REPLAY_CHILD, str(copies), str(path)) as targets:
            inventory = work / "replay-targets.yaml"
            inventory.write_text(json.dumps({"format": 1, "targets": [
                {**t, "protocol": "gnmi", "sample_interval_s": 1.0,
                 "credentials": {"username_env": "ROCEWATCH_BENCH_USER",
                                 "password_env": "ROCEWATCH_BENCH_PASSWORD"}}
                for t in targets]}))
            result = live_rate(GnmiOptions(targets=str(inventory), flush_interval_s=0.25),
                               seconds / len(recs), warmup=2.0)
        click.echo(f"  {rec.profile:<11}{result['samples'] / result['wall_s']:>12,.0f} samples/s "
                   f"wall, {result['cpu_s'] / result['wall_s']:.2f} CPU cores busy, "
                   f"{result['samples'] / max(result['cpu_s'], 1e-9):,.0f} per CPU second")


def _snmp(work: Path, seconds: float, pairs: int, agents: int, pollers: int) -> None:
    with snmpd(work, pairs, agents) as (netns, ports):
        result = in_netns(netns, lambda: asyncio.run(
            _poll_back_to_back(ports, pollers, seconds)))
    where = f"{2 * pairs + 1} interfaces in a netns" if netns else "loopback's interfaces"
    click.echo(f"\nSNMP v2c against net-snmp snmpd ({agents} agents, {where}), {pollers} pollers "
               f"back to back, the full snmp profile; this process only (snmpd not counted):")
    click.echo(f"  {result['varbinds'] / result['wall_s']:,.0f} varbinds/s wall "
               f"({result['samples'] / result['wall_s']:,.0f} samples/s), "
               f"{result['cpu_s'] / result['wall_s']:.2f} CPU cores busy, "
               f"{result['varbinds'] / max(result['cpu_s'], 1e-9):,.0f} varbinds per CPU second; "
               f"errors {result['errors']:.0f}")
