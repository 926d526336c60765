"""Fixtures for the collector tests: a scripted gNMI target, TLS material, snmpsim, snmpd.

The scripted target is a real gRPC gNMI server on loopback that sends whatever bytes a test
scripts (including malformed ones), for the bad-input and session cases the lab's honest switches
never produce. snmpsim serves a recorded walk we author; snmpd is Debian's net-snmp agent.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pygnmi.spec.v080 import gnmi_pb2 as pb

from pipeline.model import SampleBatch
from rocewatch.bench.peers import in_netns

# -- sinks ------------------------------------------------------------------------------------


class Sink:
    """Collects emitted batches; tests wait on conditions over them, never on sleeps."""

    def __init__(self) -> None:
        self.batches: list[SampleBatch] = []
        self._cond = threading.Condition()

    def __call__(self, batch: SampleBatch) -> None:
        with self._cond:
            self.batches.append(batch)
            self._cond.notify_all()

    def rows(self) -> list[tuple[int, str, str, str, int, float, int]]:
        with self._cond:
            batches = list(self.batches)
        return [row for b in batches for row in b.rows()]

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout: float = 20.0,
                 what: str = "condition") -> list[Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                rows = [row for b in self.batches for row in b.rows()]
                if predicate(rows):
                    return rows
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; last rows: {rows[-8:]}")
                self._cond.wait(min(left, 0.5))


@pytest.fixture
def sink() -> Sink:
    return Sink()


# -- a scripted gNMI target -------------------------------------------------------------------

Script = Callable[[pb.SubscribeRequest, "ScriptedTarget"], Iterator[bytes]]


@dataclass
class ScriptedTarget:
    """A gNMI server on 127.0.0.1 whose Subscribe replies are scripted raw bytes."""

    script: Script
    tls: tuple[bytes, bytes, bytes | None] | None = None  # (cert, key, client CA for mTLS)
    username: str = "admin"
    password: str = "admin"
    encodings: tuple[int, ...] = (pb.JSON_IETF, pb.PROTO)
    port: int = 0
    requests: list[pb.SubscribeRequest] = field(default_factory=list)
    subscribes: int = 0
    peers: list[str] = field(default_factory=list)
    _server: Any = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _check(self, context: grpc.ServicerContext) -> None:
        md = dict(context.invocation_metadata())
        if md.get("username") != self.username or md.get("password") != self.password:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad username or password")

    def _capabilities(self, request: pb.CapabilityRequest,
                      context: grpc.ServicerContext) -> pb.CapabilityResponse:
        self._check(context)
        return pb.CapabilityResponse(supported_encodings=list(self.encodings),
                                     gNMI_version="0.8.0")

    def _subscribe(self, requests: Iterator[pb.SubscribeRequest],
                   context: grpc.ServicerContext) -> Iterator[bytes]:
        self._check(context)
        request = next(requests)
        self.requests.append(request)
        self.subscribes += 1
        self.peers.append(context.peer())
        for data in self.script(request, self):
            if not context.is_active():
                return
            yield data

    def start(self) -> ScriptedTarget:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "Capabilities": grpc.unary_unary_rpc_method_handler(
                self._capabilities, request_deserializer=pb.CapabilityRequest.FromString,
                response_serializer=pb.CapabilityResponse.SerializeToString),
            "Subscribe": grpc.stream_stream_rpc_method_handler(
                self._subscribe, request_deserializer=pb.SubscribeRequest.FromString,
                response_serializer=None),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("gnmi.gNMI",
                                                                               handlers),))
        bind = f"127.0.0.1:{self.port}"
        if self.tls is None:
            self.port = server.add_insecure_port(bind)
        else:
            cert, key, client_ca = self.tls
            creds = grpc.ssl_server_credentials([(key, cert)], root_certificates=client_ca,
                                                require_client_auth=client_ca is not None)
            self.port = server.add_secure_port(bind, creds)
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None


@pytest.fixture
def gnmi_targets() -> Iterator[list[ScriptedTarget]]:
    """Targets a test starts; all stopped afterwards."""
    started: list[ScriptedTarget] = []
    yield started
    for target in started:
        target.stop()


def notification(ts: int, updates: list[tuple[str, pb.TypedValue]], origin: str = "openconfig",
                 prefix: str = "", target: str = "", deletes: tuple[str, ...] = ()) -> bytes:
    """A serialized SubscribeResponse with one notification (paths in text form)."""
    from collectors.gnmi.session import parse_path

    n = pb.Notification(timestamp=ts, prefix=parse_path(prefix, origin=origin, target=target))
    for path, value in updates:
        n.update.add(path=parse_path(path), val=value)
    for path in deletes:
        n.delete.append(parse_path(path))
    return pb.SubscribeResponse(update=n).SerializeToString()


SYNC = pb.SubscribeResponse(sync_response=True).SerializeToString()


def hold(target: ScriptedTarget, released: threading.Event | None = None) -> Iterator[bytes]:
    """Keep a stream open without sending (until released or the server stops)."""
    while not (released and released.is_set()) and target._server is not None:
        time.sleep(0.05)
    return
    yield b""


# -- TLS --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path

    def read(self, path: Path) -> bytes:
        return path.read_bytes()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(subject: str, issuer_key: Any, issuer: x509.Name, ca: bool,
           sans: list[x509.GeneralName] | None = None) -> tuple[Any, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _write(path: Path, key: Any, cert: x509.Certificate) -> tuple[Path, Path]:
    cert_path, key_path = path.with_suffix(".pem"), path.with_suffix(".key")
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, another CA."""
    root = tmp_path_factory.mktemp("pki")
    ca_key, ca_cert = _issue("rocewatch test CA", None, _name("rocewatch test CA"), True)
    ca_path, _ = _write(root / "ca", ca_key, ca_cert)
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    skey, scert = _issue("gnmi-target", ca_key, ca_cert.subject, False, sans)
    server_cert, server_key = _write(root / "server", skey, scert)
    ckey, ccert = _issue("rocewatch-collector", ca_key, ca_cert.subject, False)
    client_cert, client_key = _write(root / "client", ckey, ccert)
    okey, ocert = _issue("some other CA", None, _name("some other CA"), True)
    other_ca, _ = _write(root / "other-ca", okey, ocert)
    return Pki(ca_path, server_cert, server_key, client_cert, client_key, other_ca)


# -- processes --------------------------------------------------------------------------------


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


# -- snmpsim ----------------------------------------------------------------------------------

DATA = Path(__file__).parent / "data"
SNMPSIM = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "snmpsim-command-responder"
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


@pytest.fixture
def snmpsim(tmp_path: Path) -> Iterator[SnmpSim]:
    """snmpsim with the recorded leaf (community ``leaf9``) and a broken device (``broken``,
    whose ifHCOutOctets answers with an SNMP error)."""
    if not SNMPSIM.exists():
        pytest.skip("snmpsim is not installed in .venv")
    data = tmp_path / "snmpsim"
    data.mkdir()
    shutil.copy(DATA / "leaf9.snmprec", data / "leaf9.snmprec")
    lines = (DATA / "leaf9.snmprec").read_text().splitlines()
    broken = [line if not line.startswith("1.3.6.1.2.1.31.1.1.1.10.") else
              line.split("|")[0] + "|70:error|op=any,status=genError" for line in lines]
    (data / "broken.snmprec").write_text("\n".join(broken) + "\n")
    sim = SnmpSim(data, tmp_path / "snmpsim-cache").start()
    yield sim
    sim.stop()


# -- running collectors -----------------------------------------------------------------------


class Running:
    """A collector running in a thread; stopped (and checked stopped) on exit."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.stop = threading.Event()
        self.thread = threading.Thread(target=collector.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> Any:
        self.thread.start()
        return self.collector

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive(), "the collector did not stop"


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 15.0) -> None:
    """Poll a collector's state (health has no event to wait on) until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def write_targets(path: Path, targets: list[dict[str, Any]]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"format": 1, "targets": targets}))
    return path


# -- net-snmp's snmpd -------------------------------------------------------------------------


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


@pytest.fixture
def snmpd(tmp_path: Path) -> Iterator[Snmpd]:
    if shutil.which("snmpd") is None:
        pytest.skip("net-snmp's snmpd is not installed (apt-get install snmpd snmp)")
    agent = Snmpd(tmp_path / "snmpd").start()
    yield agent
    agent.stop()


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


@pytest.fixture
def netns_snmpd(tmp_path: Path) -> Iterator[tuple[NetNs, Snmpd]]:
    """snmpd serving 32 veth pairs (64 interfaces) inside a namespace of its own."""
    if shutil.which("snmpd") is None or not is_root:
        pytest.skip("needs snmpd and root (network namespaces)")
    ns = NetNs(f"rwtest{os.getpid()}", 32).create()
    agent = Snmpd(tmp_path / "snmpd-ns", netns=ns.name)
    try:
        agent.start()
        yield ns, agent
    finally:
        agent.stop()
        ns.delete()
