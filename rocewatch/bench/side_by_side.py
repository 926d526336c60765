"""``rocewatch bench collect --part peer``: rocewatch's gNMI collector beside another collector.

The lab runs in a child interpreter; rocewatch's ``GnmiCollector`` runs in a second one (it
subscribes to every switch of the lab's ``agents.json``), and the command the user names runs as
a third process against the same switches, at the same time. Over one window, each process's CPU
(user + system, all threads) is read from ``/proc/<pid>/stat`` and divided by what it received:

* rocewatch: notifications (``messages_total`` of its targets' health) and samples (the values
  that became catalog samples);
* the peer: the JSON objects it printed on standard output that hold an ``updates`` list
  (gnmic's ``subscribe`` output format: one object per notification), and the entries of those
  lists.

The peer command is a template: ``{addresses}`` (``host:port,...``), ``{targets_file}`` (a JSON
list of ``{name, address, profile, username, password, sample_interval_s}``), ``{username}``,
``{password}`` and ``{interval}`` (the lab's sample interval in seconds) are filled in. When its
program is not on this machine the part says so and skips: nothing is measured.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from rocewatch.bench.peers import Peer, lab_process

# rocewatch's collector in a child of its own: the first line says it started, then every
# "count" on stdin prints what its targets received so far
RW_CHILD = """
import json, sys, threading
from collectors.gnmi.collector import GnmiCollector, GnmiOptions
collector = GnmiCollector("bench-peer", GnmiOptions(agents=sys.argv[1]), emit=lambda batch: None)
stop = threading.Event()
thread = threading.Thread(target=collector.run, args=(stop,), daemon=True)
thread.start()
print(json.dumps({"started": True}), flush=True)
for line in sys.stdin:
    targets = collector.health()["targets"].values()
    print(json.dumps({"notifications": sum(t["messages_total"] for t in targets),
                      "samples": sum(t["samples_total"] for t in targets),
                      "up": sum(1 for t in targets if t["up"])}), flush=True)
stop.set()
thread.join(30)
"""


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (every thread) from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is fields[0]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class OutputTally:
    """Counts the notifications (objects with an ``updates`` list) in a stream of JSON values,
    one per line or pretty-printed over many."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.notifications = 0
        self.updates = 0
        self.other = 0
        self._decoder = json.JSONDecoder()
        self._buffer = ""

    def feed(self, text: str) -> None:
        self._buffer += text
        while True:
            stripped = self._buffer.lstrip()
            if not stripped:
                self._buffer = ""
                return
            try:
                value, end = self._decoder.raw_decode(stripped)
            except json.JSONDecodeError:
                newline = stripped.find("\n")
                if stripped[0] in "{[" or newline < 0:
                    self._buffer = stripped  # an incomplete value: wait for more
                    return
                self._buffer = stripped[newline + 1:]  # a line of plain text: not ours
                with self.lock:
                    self.other += 1
                continue
            self._buffer = stripped[end:]
            self._count(value)

    def _count(self, value: Any) -> None:
        values = value if isinstance(value, list) else [value]
        with self.lock:
            for item in values:
                if isinstance(item, dict) and isinstance(item.get("updates"), list):
                    self.notifications += 1
                    self.updates += len(item["updates"])
                else:
                    self.other += 1

    def read(self, stream: IO[str]) -> None:
        for line in stream:
            self.feed(line)

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.notifications, self.updates


@dataclass
class Side:
    """What one collector received over the window and the CPU it took."""

    cpu_s: float
    notifications: int
    updates: int

    def per(self, count: int) -> float | None:
        return self.cpu_s / count * 1e6 if count else None


def peer_argv(command: str, agents: dict[str, Any], targets_file: Path) -> list[str]:
    """The peer command's argument list, placeholders filled in."""
    targets = [{"name": s["name"], "address": s["gnmi"]["address"],
                "profile": s["gnmi"]["profile"], "username": s["gnmi"]["username"],
                "password": s["gnmi"]["password"],
                "sample_interval_s": agents["sample_interval_s"]}
               for s in agents["switches"] if s.get("gnmi")]
    targets_file.write_text(json.dumps(targets))
    first = targets[0] if targets else {"username": "", "password": ""}
    values = {"addresses": ",".join(t["address"] for t in targets),
              "targets_file": str(targets_file), "username": first["username"],
              "password": first["password"], "interval": f"{agents['sample_interval_s']:g}"}
    return [part.format(**values) for part in shlex.split(command)]


def missing_program(command: str | None) -> str | None:
    """Why the peer part cannot run, or None when it can."""
    if not command:
        return "no --peer-command given"
    argv = shlex.split(command)
    if not argv:
        return "the --peer-command is empty"
    if shutil.which(argv[0]) is None:
        return f"{argv[0]!r} is not on this machine (PATH)"
    return None


def side_by_side(work: Path, command: str | None, seconds: float, speed: float, spines: int,
                 leaves: int, hosts: int, warmup: float = 3.0) -> tuple[Side, Side] | None:
    """Measure both collectors over one window; print the comparison (None when skipped)."""
    why = missing_program(command)
    if why is not None or command is None:
        click.echo(f"\npeer: skipped: {why}; nothing measured (give the other collector's "
                   f"command, e.g. --peer-command \"gnmic -a {{addresses}} -u {{username}} "
                   f"-p {{password}} --insecure subscribe --path /interfaces\")")
        return None
    with lab_process(work, speed, spines=spines, leaves=leaves, hosts=hosts) as agents:
        agents_file = work / "agents.json"
        agents_file.write_text(json.dumps(agents))
        argv = peer_argv(command, agents, work / "peer-targets.json")
        switches = sum(1 for s in agents["switches"] if s.get("gnmi"))
        with Peer(RW_CHILD, str(agents_file)) as ours:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    text=True)
            tally = OutputTally()
            assert proc.stdout is not None
            reader = threading.Thread(target=tally.read, args=(proc.stdout,), daemon=True)
            reader.start()
            try:
                time.sleep(warmup)  # both subscribed and past their initial notifications
                if proc.poll() is not None:
                    raise click.ClickException(
                        f"the peer command ended early (exit {proc.returncode}): {argv}")
                ours0, theirs0 = ours.ask("count"), tally.snapshot()
                cpu_ours0, cpu_theirs0 = proc_cpu_s(ours.proc.pid), proc_cpu_s(proc.pid)
                time.sleep(seconds)
                cpu_ours, cpu_theirs = proc_cpu_s(ours.proc.pid), proc_cpu_s(proc.pid)
                ours1, theirs1 = ours.ask("count"), tally.snapshot()
            finally:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
                reader.join(5)
    rw = Side(cpu_ours - cpu_ours0, ours1["notifications"] - ours0["notifications"],
              ours1["samples"] - ours0["samples"])
    peer = Side(cpu_theirs - cpu_theirs0, theirs1[0] - theirs0[0], theirs1[1] - theirs0[1])
    _print(argv, switches, ours1["up"], speed, seconds, rw, peer, tally.other)
    return rw, peer


def _us(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "-"


def _print(argv: list[str], switches: int, up: int, speed: float, seconds: float, rw: Side,
           peer: Side, other: int) -> None:
    click.echo(f"\ngNMI side by side: the lab ({switches} switches, speed {speed:g}, another "
               f"process); rocewatch's collector ({up} up at the end) and `{argv[0]}` "
               f"subscribed to the same switches at the same time; CPU of each process from "
               f"/proc/<pid>/stat over {seconds:g} s:")
    click.echo(f"  {'collector':<12}{'CPU s':>7}{'notifications':>15}{'us/notification':>17}"
               f"{'updates':>10}{'us/update':>11}")
    for name, side in (("rocewatch", rw), (Path(argv[0]).name, peer)):
        click.echo(f"  {name:<12}{side.cpu_s:>7.2f}{side.notifications:>15,}"
                   f"{_us(side.per(side.notifications)):>17}{side.updates:>10,}"
                   f"{_us(side.per(side.updates)):>11}")
    click.echo("  (rocewatch's updates are the values that became samples; the peer's are the "
               "entries of the `updates` lists it printed"
               + (f"; {other} other values or lines on its stdout were not counted)"
                  if other else ")"))
