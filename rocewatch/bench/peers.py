"""Peers the collector benchmark measures against, each outside this process's CPU account:
the lab and recorded-stream servers in child interpreters, and net-snmp's snmpd (in a network
namespace with veth interfaces when root)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

SCENARIO = """format: 1
name: bench-collect
seed: 1
duration_s: 3600
sample_interval_s: 1
fabric: {{spines: {spines}, leaves: {leaves}, hosts_per_leaf: {hosts}, uplinks_per_pair: 1,
  link_gbps: 400, host_gbps: 400, agents: {{gnmi: 1.0, snmp: 0.0}},
  profiles: [openconfig, arista, sonic]}}
routing: ecmp
traffic:
  - {{pattern: allreduce, hosts: all, load: 0.4, qps_per_flow: 2}}
"""

# -- peers in child interpreters ------------------------------------------------------------
# A child prints one JSON line once it serves, and stops when its standard input closes; its CPU
# is not this process's, so the numbers below are the collector's alone.

LAB_CHILD = """
import json, sys
from pathlib import Path
from lab.runtime import Lab
lab = Lab(sys.argv[1], speed=float(sys.argv[2]), out_dir=Path(sys.argv[3])).start()
try:
    print(json.dumps(lab.agents()), flush=True)
    sys.stdin.read()
finally:
    lab.stop()
"""

# recorded streams served back at full speed: the live path's ceiling when the source is not the
# bottleneck (one target per recording and copy)
REPLAY_CHILD = """
import json, sys
from pathlib import Path
from collectors.gnmi.recording import Recording, serve
servers, targets = [], []
for path in sys.argv[2:]:
    rec = Recording.load(Path(path))
    for i in range(int(sys.argv[1])):
        server, port = serve(rec)
        servers.append(server)
        targets.append({"name": f"{rec.profile}{i}", "address": f"127.0.0.1:{port}",
                        "profile": rec.profile})
print(json.dumps(targets), flush=True)
sys.stdin.read()
for server in servers:
    server.stop(None)
"""

# recorded streams served on their schedule by many targets (collectors.gnmi.replay), with a
# command line on stdin: "drop" ends every stream at once, "arrivals" prints when the connects
# (Capabilities) came in since the last drop and the CPU the replay used; the first line printed
# lists the targets
PACED_CHILD = """
import asyncio, json, sys, time
from pathlib import Path
from collectors.gnmi.recording import Recording
from collectors.gnmi.replay import PacedReplay

async def main():
    recs = [Recording.load(Path(p)) for p in sys.argv[3:]]
    replay = await PacedReplay(recs, int(sys.argv[1]), float(sys.argv[2])).start()
    print(json.dumps(replay.targets()), flush=True)
    loop = asyncio.get_running_loop()
    dropped_at = time.monotonic()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line:
            break
        if line == "drop":
            dropped_at = time.monotonic()
            replay.drop_all()
            print(json.dumps({"dropped": True}), flush=True)
        elif line == "arrivals":
            import resource
            times = [t - dropped_at for t in replay.arrivals if t >= dropped_at]
            use = resource.getrusage(resource.RUSAGE_SELF)
            print(json.dumps({"arrivals": times, "subscribes": replay.subscribes,
                              "cpu_s": use.ru_utime + use.ru_stime}), flush=True)
    await replay.stop()

asyncio.run(main())
"""


class Peer:
    """A child interpreter spoken to in JSON lines (the first line it prints: what it serves)."""

    def __init__(self, code: str, *args: str) -> None:
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
        self.proc = subprocess.Popen([sys.executable, "-c", code, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True)
        try:
            self.first = self.read()
        except BaseException:
            self.close(5.0)
            raise

    def read(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise click.ClickException("a benchmark peer ended early (see its output above)")
        return json.loads(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def ask(self, line: str) -> Any:
        self.send(line)
        return self.read()

    def close(self, timeout: float = 60.0) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(10)

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def child(code: str, *args: str) -> Iterator[Any]:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        line = proc.stdout.readline()
        if not line:
            raise click.ClickException("a benchmark peer did not start (see its output above)")
        yield json.loads(line)
    finally:
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(10)


def lab_process(workdir: Path, speed: float, spines: int, leaves: int,
                hosts: int) -> contextlib.AbstractContextManager[dict[str, Any]]:
    scenario = workdir / "bench.yaml"
    scenario.write_text(SCENARIO.format(spines=spines, leaves=leaves, hosts=hosts))
    return child(LAB_CHILD, str(scenario), str(speed), str(workdir / "lab"))



@contextlib.contextmanager
def snmpd(workdir: Path, pairs: int, agents: int) -> Iterator[tuple[str | None, list[int]]]:
    """``agents`` net-snmp snmpd processes on loopback (one device each); inside a namespace
    with ``pairs`` veth pairs when root."""
    if shutil.which("snmpd") is None:
        raise click.ClickException("snmpd is not installed (apt-get install snmpd snmp)")
    netns = f"rwbench{os.getpid()}" if pairs and os.geteuid() == 0 else None
    conf = workdir / "snmpd.conf"
    conf.write_text("rocommunity bench 127.0.0.1\n")
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        if netns:
            subprocess.run(["ip", "netns", "add", netns], check=True)
            script = ["link set lo up"] + [
                line for k in range(pairs) for line in (
                    f"link add Ethernet{2 * k + 1} type veth peer name Ethernet{2 * k + 2}",
                    f"link set Ethernet{2 * k + 1} up", f"link set Ethernet{2 * k + 2} up")]
            subprocess.run(["ip", "-n", netns, "-batch", "-"], input="\n".join(script).encode(),
                           check=True)
        wrap = ["ip", "netns", "exec", netns] if netns else []
        for i in range(agents):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            cmd = ["snmpd", "-f", "-m", "", "-C", "-c", str(conf), "-Lf",
                   str(workdir / f"snmpd{i}.log"), "-p", str(workdir / f"snmpd{i}.pid"),
                   f"udp:127.0.0.1:{port}"]
            procs.append(subprocess.Popen([*wrap, *cmd], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL,
                                          env={**os.environ, "SNMP_PERSISTENT_DIR":
                                               str(workdir / f"snmpd{i}")}))
            ports.append(port)
        for port in ports:
            probe = [*wrap, "snmpget", "-m", "", "-v2c", "-c", "bench", "-r", "0", "-t", "0.3",
                     f"127.0.0.1:{port}", "1.3.6.1.2.1.1.3.0"]
            deadline = time.monotonic() + 10
            while subprocess.run(probe, capture_output=True, check=False).returncode != 0:
                if time.monotonic() > deadline:
                    raise click.ClickException(f"snmpd on port {port} did not answer in 10 s")
        yield netns, ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
        if netns:
            subprocess.run(["ip", "netns", "del", netns], check=False)


def in_netns(netns: str | None, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread that entered ``netns`` (sockets it opens live there)."""
    result: dict[str, Any] = {}

    def body() -> None:
        if netns:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            with open(f"/var/run/netns/{netns}") as ns:
                if libc.setns(ns.fileno(), 0x40000000) != 0:  # CLONE_NEWNET: this thread only
                    result["error"] = OSError(ctypes.get_errno(), "setns failed")
                    return
        try:
            result["value"] = fn()
        except BaseException as exc:
            result["error"] = exc

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
