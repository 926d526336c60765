"""``rocewatch bench collect --part gnmi-scale``: the gNMI collector's targets-per-process curve.

For each target count, recorded lab streams (one leaf per dialect) are served on their schedule
by that many targets (:class:`collectors.gnmi.replay.PacedReplay`, in a child interpreter, so its
CPU is not the collector's), and one ``GnmiCollector`` runs in a second child interpreter that
measures itself:

* connect: wall seconds until every target is up, and the CPU it took;
* steady state over a window: CPU cores busy, samples per second, resident memory (whole
  process, and per target above the interpreter's baseline: as resident, and once the allocator
  returned its free memory), OS threads, delivery lag (wall time of the emit minus the sample's
  time), and gaps: sample intervals of a target with no sample;
* a fabric-wide reconnect: the replay ends every stream at once; how the connects came back
  (their span and the most in any 100 ms, seen by the replay as Capabilities calls) and the gaps
  it left, measured by the collector.

The collector child prints one JSON line per phase; this module only orchestrates and prints.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from rocewatch.bench.peers import PACED_CHILD, Peer

COLLECTOR_CHILD = "from rocewatch.bench.scale import child_main; child_main()"
#: a checkout whose ``collectors`` and ``pipeline`` the collector child imports instead of ours
TREE_ENV = "ROCEWATCH_BENCH_COLLECTOR_TREE"


# -- the collector child ----------------------------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _trimmed_rss() -> int:
    """Resident KiB once the allocator handed back what it keeps free (glibc ``malloc_trim``):
    what the targets hold, not the peaks of their initial notifications."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _status("VmRSS")


def missing_intervals(stamps: list[int], start_ns: int, end_ns: int, interval_ns: int) -> int:
    """Sample intervals in [start, end) in which a target sent nothing."""
    inside = sorted(t for t in stamps if start_ns <= t < end_ns)
    edges = [start_ns, *inside, end_ns]
    missing = 0
    for a, b in itertools.pairwise(edges):
        missing += max(0, round((b - a) / interval_ns) - 1)
    return missing


class _Tally:
    """What the collector emitted, per target: data sample times and the delivery lag."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stamps: dict[str, list[int]] = {}
        self.samples = 0
        self.lags: list[float] = []

    def __call__(self, batch: Any) -> None:
        import numpy as np

        from pipeline.metrics import metric_id

        health = np.isin(batch.metric, [metric_id(m) for m in (
            "collector_up", "collector_expected", "collector_received", "collector_errors")])
        data = batch.ts_ns[~health] if health.any() else batch.ts_ns
        if not len(data):
            return
        now = time.time_ns()
        times = np.unique(data).tolist()  # sorted, as ints; no Python loop per sample
        with self.lock:
            self.samples += len(data)
            self.stamps.setdefault(batch.devices[0], []).extend(times)
            if len(self.lags) < 200_000:
                self.lags.append((now - times[-1]) / 1e9)


def _collector(kind: str, targets_file: str, emit: Any) -> Any:
    if kind == "snmp":
        from collectors.snmp.collector import SnmpCollector, SnmpOptions

        return SnmpCollector("bench", SnmpOptions(targets=targets_file,
                                                  bind_address="127.0.0.1"), emit=emit)
    from collectors.gnmi.collector import GnmiCollector, GnmiOptions

    return GnmiCollector("bench", GnmiOptions(targets=targets_file), emit=emit)


def child_main() -> None:
    """The measuring collector: ``kind targets-file interval-s window-s`` on the command line."""
    kind, targets_file = sys.argv[1], sys.argv[2]
    interval_s, window_s = float(sys.argv[3]), float(sys.argv[4])
    tree = os.environ.get(TREE_ENV)
    if tree:  # another checkout's collector (and the pipeline it stands on), not this one's
        sys.path.insert(0, tree)
    interval_ns = int(interval_s * 1e9)
    tally = _Tally()
    rss0 = _trimmed_rss()
    collector = _collector(kind, targets_file, tally)
    total = len(collector.health()["targets"])
    stop = threading.Event()
    thread = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    cpu0, t0 = _cpu(), time.monotonic()
    thread.start()
    deadline = t0 + max(120.0, total / 10)
    while collector.health()["targets_up"] < total and time.monotonic() < deadline:
        time.sleep(0.1)
    connect_s, connect_cpu = time.monotonic() - t0, _cpu() - cpu0
    time.sleep(2 * interval_s)  # every target past its initial notifications
    with tally.lock:
        samples0, tally.lags = tally.samples, []
    cpu1, wall1, start_ns = _cpu(), time.monotonic(), time.time_ns()
    time.sleep(window_s)
    cpu2, wall2, end_ns = _cpu(), time.monotonic(), time.time_ns()
    with tally.lock:
        samples, lags = tally.samples - samples0, sorted(tally.lags)
    time.sleep(min(2.0, interval_s))  # the window's last samples arrive
    rss = _status("VmRSS")
    trimmed = _trimmed_rss()
    health = collector.health()
    with tally.lock:
        stamps = {d: list(v) for d, v in tally.stamps.items()}
    gaps = sum(missing_intervals(stamps.get(name, []), start_ns, end_ns - interval_ns,
                                 interval_ns) for name in health["targets"])
    print(json.dumps({
        "targets": total, "up": health["targets_up"], "connect_s": connect_s,
        "connect_cpu_s": connect_cpu, "cores": (cpu2 - cpu1) / (wall2 - wall1),
        "samples_per_s": samples / (wall2 - wall1), "rss_kib": rss,
        "rss_per_target_kib": (rss - rss0) / max(total, 1),
        "trimmed_per_target_kib": (trimmed - rss0) / max(total, 1),
        "threads": _status("Threads"), "gaps": gaps,
        "intervals": total * max(0, round((end_ns - interval_ns - start_ns) / interval_ns)),
        "lag_p50_s": lags[len(lags) // 2] if lags else None,
        "lag_p99_s": lags[int(len(lags) * 0.99)] if lags else None,
        "errors": sum(t["errors_total"] for t in health["targets"].values()),
        "overruns": sum(t.get("overruns", 0) for t in health["targets"].values()),
    }), flush=True)
    # a fabric-wide reconnect: the parent drops every stream once we say we are watching
    if sys.stdin.readline().strip() == "reconnect":
        connects0 = {n: t["connects"] for n, t in health["targets"].items()}
        mark_ns, mark = time.time_ns(), time.monotonic()
        cpu3 = _cpu()
        print(json.dumps({"watching": True}), flush=True)
        back_s = None
        limit = mark + max(60.0, total / 10)
        while time.monotonic() < limit:
            now = collector.health()["targets"]
            if all(t["connects"] > connects0.get(n, 0) and t["up"] for n, t in now.items()):
                back_s = time.monotonic() - mark
                break
            time.sleep(0.05)
        time.sleep(3 * interval_s)
        end2_ns = time.time_ns()
        cpu4 = _cpu()
        with tally.lock:
            stamps = {d: list(v) for d, v in tally.stamps.items()}
        gaps2 = sum(missing_intervals(stamps.get(name, []), mark_ns - interval_ns,
                                      end2_ns - interval_ns, interval_ns)
                    for name in health["targets"])
        print(json.dumps({"back_s": back_s, "gaps": gaps2, "cpu_s": cpu4 - cpu3}), flush=True)
    stop.set()
    thread.join(60)
    os._exit(0)  # skip interpreter teardown of thousands of channels


# -- the parent -------------------------------------------------------------------------------


def scale(work: Path, recordings: list[Path], counts: list[int], interval_s: float,
          window_s: float, compare_tree: Path | None = None) -> None:
    """Print the curve (one row per target count) and the reconnect of each count; with
    ``compare_tree``, a second row per count for that checkout's collector, measured next."""
    os.environ.setdefault("ROCEWATCH_BENCH_USER", "bench")
    os.environ.setdefault("ROCEWATCH_BENCH_PASSWORD", "bench")
    click.echo(f"\ngNMI targets per collector process: recorded lab leaves ({len(recordings)} "
               f"dialects) served on a {interval_s:g} s schedule by paced replay targets (another "
               f"process); the collector in a process of its own, measuring itself over "
               f"{window_s:g} s:")
    click.echo(f"  {'tree':<7}{'targets':>7}{'up':>6}{'connect s':>10}{'cores':>7}"
               f"{'samples/s':>11}{'RSS MiB':>9}{'KiB/target':>15}{'threads':>8}"
               f"{'lag p50/p99 s':>15}{'gaps':>9}   reconnect of all: back in s, connects span "
               f"s / max per 100 ms, gaps; replay CPU s")
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if compare_tree is not None:
        trees.append(("other", compare_tree))
    for count in counts:
        for label, tree in trees:
            click.echo(f"  {label:<7}" + _scale_row(work, recordings, count, interval_s,
                                                    window_s, tree))


def _scale_row(work: Path, recordings: list[Path], count: int, interval_s: float,
               window_s: float, tree: Path | None) -> str:
    env_before = os.environ.pop(TREE_ENV, None)
    if tree is not None:
        os.environ[TREE_ENV] = str(tree.resolve())
    try:
        with Peer(PACED_CHILD, str(count), str(interval_s), *map(str, recordings)) as replay:
            inventory = work / f"scale-{count}.yaml"
            inventory.write_text(json.dumps({"format": 1, "targets": [
                {**t, "protocol": "gnmi", "sample_interval_s": interval_s,
                 "credentials": {"username_env": "ROCEWATCH_BENCH_USER",
                                 "password_env": "ROCEWATCH_BENCH_PASSWORD"}}
                for t in replay.first]}))
            with Peer(COLLECTOR_CHILD, "gnmi", str(inventory), str(interval_s),
                      str(window_s)) as coll:
                r = coll.first
                coll.ask("reconnect")
                replay.ask("drop")
                back = coll.read()
                served = replay.ask("arrivals")
                arrivals = sorted(served["arrivals"])
    finally:
        os.environ.pop(TREE_ENV, None)
        if env_before is not None:
            os.environ[TREE_ENV] = env_before
    span = arrivals[-1] - arrivals[0] if arrivals else 0.0
    peak = max((sum(1 for b in arrivals if a <= b < a + 0.1) for a in arrivals), default=0)
    lag = (f"{r['lag_p50_s']:.2f}/{r['lag_p99_s']:.2f}" if r["lag_p50_s"] is not None
           else "-")
    back_s = f"{back['back_s']:.1f}" if back["back_s"] is not None else "never"
    return (f"{r['targets']:>7}{r['up']:>6}{r['connect_s']:>10.1f}{r['cores']:>7.2f}"
            f"{r['samples_per_s']:>11,.0f}{r['rss_kib'] / 1024:>9.0f}"
            f"{r['rss_per_target_kib']:>9.0f}/{r['trimmed_per_target_kib']:<5.0f}"
            f"{r['threads']:>8}{lag:>15}"
            f"{r['gaps']:>5}/{r['intervals']:<5}  {back_s:>6}, {span:.1f} / {peak}, "
            f"{back['gaps']}; {served['cpu_s']:.0f}")


def snmp_scale(work: Path, counts: list[int], interval_s: float, window_s: float,
               agents: int) -> None:
    """The SNMP collector's curve: ``count`` targets polling ``agents`` net-snmp snmpd processes
    on loopback (targets share an agent; snmpd's CPU is not the collector's)."""
    from rocewatch.bench.peers import snmpd

    os.environ.setdefault("ROCEWATCH_BENCH_COMMUNITY", "bench")
    click.echo(f"\nSNMP targets per collector process: polled every {interval_s:g} s, {agents} "
               f"snmpd agents on loopback shared by the targets (the full snmp profile); the "
               f"collector in a process of its own, measuring itself over {window_s:g} s:")
    click.echo(f"  {'targets':>7}{'up':>6}{'cores':>7}{'samples/s':>11}{'RSS MiB':>9}"
               f"{'KiB/target':>15}{'threads':>8}{'gaps':>13}{'overruns':>10}")
    with snmpd(work, 0, agents) as (_netns, ports):
        for count in counts:
            inventory = work / f"snmp-scale-{count}.yaml"
            inventory.write_text(json.dumps({"format": 1, "targets": [
                {"name": f"snmp-{i}", "address": f"127.0.0.1:{ports[i % len(ports)]}",
                 "protocol": "snmp", "profile": "snmp", "sample_interval_s": interval_s,
                 "snmp": {"version": "2c", "community_env": "ROCEWATCH_BENCH_COMMUNITY",
                          "timeout_s": 2.0, "retries": 1}}
                for i in range(count)]}))
            with Peer(COLLECTOR_CHILD, "snmp", str(inventory), str(interval_s),
                      str(window_s)) as coll:
                r = coll.first
                coll.send("done")
            click.echo(f"  {r['targets']:>7}{r['up']:>6}{r['cores']:>7.2f}"
                       f"{r['samples_per_s']:>11,.0f}{r['rss_kib'] / 1024:>9.0f}"
                       f"{r['rss_per_target_kib']:>9.0f}/{r['trimmed_per_target_kib']:<5.0f}"
                       f"{r['threads']:>8}"
                       f"{r['gaps']:>6}/{r['intervals']:<6}{r['overruns']:>10}")
