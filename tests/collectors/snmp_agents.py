"""SNMP agents for the collector tests, on loopback: snmpsim serving a recorded walk we author,
Debian's net-snmp snmpd (optionally in a network namespace of its own), and their processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rocewatch.bench.peers import in_netns


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


def wait_udp_agent(port: int, community: str, timeout: float = 10.0,
                   netns: str | None = None) -> None:
    """Poll with net-snmp's snmpget until the agent answers sysUpTime."""
    cmd = ["snmpget", "-m", "", "-v2c", "-c", community, "-r", "0", "-t", "0.3", "-On",
           f"127.0.0.1:{port}", "1.3.6.1.2.1.1.3.0"]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(cmd, check=False, capture_output=True).returncode == 0:
            return
    raise AssertionError(f"no SNMP agent answered on 127.0.0.1:{port}")


have_snmpd = pytest.mark.skipif(shutil.which("snmpd") is None, reason="net-snmp snmpd missing")
is_root = os.geteuid() == 0


DATA = Path(__file__).parent / "data"
SNMPSIM = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "snmpsim-command-responder"


def bundled_recording(name: str) -> Path:
    """A recording snmpsim ships (``linux-full-walk``, ``winxp-full-walk``, ``linksys-system``)."""
    import snmpsim

    return Path(snmpsim.__file__).parent / "data" / "recorded" / f"{name}.snmprec"

V3_USER, V3_AUTH, V3_PRIV = "rocewatch", "authpass-9f2", "privpass-1c7"


@dataclass
class SnmpSim:
    """snmpsim serving the recorded walks in ``data_dir`` (community = file name) on loopback."""

    data_dir: Path
    cache_dir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> SnmpSim:
        self.port = self.port or free_udp_port()
        env = {**os.environ, "SNMPSIM_ALLOW_ROOT": "true"}
        self.proc = subprocess.Popen(
            # everything after --v3-engine-id configures that engine, endpoint included
            [str(SNMPSIM), f"--cache-dir={self.cache_dir}", "--logging-method=null",
             "--v3-engine-id=auto", f"--v3-user={V3_USER}", f"--v3-auth-key={V3_AUTH}",
             "--v3-auth-proto=SHA", f"--v3-priv-key={V3_PRIV}", "--v3-priv-proto=AES",
             f"--data-dir={self.data_dir}", f"--agent-udpv4-endpoint=127.0.0.1:{self.port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_udp_agent(self.port, "leaf9")
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def restart(self) -> None:
        """A device reboot: the agent comes back on the same port with its uptime at zero."""
        self.stop()
        self.start()


@dataclass
class Snmpd:
    """Debian's snmpd on loopback (optionally inside a network namespace), v2c and v3 authPriv."""

    workdir: Path
    netns: str | None = None
    community: str = "rocewatch-ro"
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Snmpd:
        self.port = self.port or free_udp_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "snmpd.conf"
        conf.write_text(
            f"rocommunity {self.community} 127.0.0.1\n"
            f'createUser {V3_USER} SHA "{V3_AUTH}" AES "{V3_PRIV}"\n'
            f"rouser {V3_USER} priv\n"
            "sysName snmpd-loopback\n")
        cmd = ["snmpd", "-f", "-m", "", "-C", "-c", str(conf), "-Lf",
               str(self.workdir / "snmpd.log"), "-p", str(self.workdir / "snmpd.pid"),
               f"udp:127.0.0.1:{self.port}"]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        env = {**os.environ, "SNMP_PERSISTENT_DIR": str(self.workdir / "persist")}
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_udp_agent(self.port, self.community, netns=self.netns)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


class NetNs:
    """A network namespace with veth pairs (interfaces for snmpd to serve); deleted afterwards."""

    def __init__(self, name: str, pairs: int) -> None:
        self.name = name
        self.pairs = pairs

    def create(self) -> NetNs:
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        script = ["link set lo up"]
        for k in range(self.pairs):
            a, b = f"Ethernet{2 * k + 1}", f"Ethernet{2 * k + 2}"
            script += [f"link add {a} type veth peer name {b}", f"link set {a} up",
                       f"link set {b} up"]
        subprocess.run(["ip", "-n", self.name, "-batch", "-"], input="\n".join(script).encode(),
                       check=True)
        return self

    def delete(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], check=False)

    def run_inside(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` in a thread that has entered the namespace (sockets it opens live there)."""
        return run_in_netns(self.name, fn)


def run_in_netns(name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread inside namespace ``name`` (the benchmark's own helper)."""
    return in_netns(name, fn)
