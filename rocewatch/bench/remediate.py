"""``rocewatch bench remediate``: the remediate role under an alert storm, at a scenario's speed.

What runs is remediation's whole service (:class:`remediation.service.Remediation`, as the
remediate role runs it) on the in-process bus, with a webhook receiver (a loopback HTTP server in
a process of its own, answering 200) and its state file on disk. A driver plays the collectors and
detection: every sample interval of event time, paced at ``interval / speed`` of wall time, it
publishes each switch's samples (``--metrics-per-port`` rows per port: oper and admin status, the
rest counters the drain checks may read) and one message of alert state changes: a PFC storm on a
host whose paused ports spread over the fabric for three intervals, every firing symptom
re-published each interval as detection does, so alerts arrive at ``--rates`` per minute of event
time; a tenth of the symptoms are unexplained (each is notified on its own, ``notify: all``,
``group_by: [alertname, entity]``), the rest are muted by the storm's inhibition. A corrupting
link fires with the storm; its drain is decided (dry run) ``confirm`` after it started.

Printed per rate: alerts/s through the lifecycle (wall), the notification lag in event time from
an alert's first publication to its flush and to its delivery at the receiver (the bar: within
``group_wait`` + one interval), the drain decision's lag behind its schedule, the runbook job's
runs, longest run and skipped runs (any "maximum number of running instances reached" logged),
and CPU seconds per wall second of this process (service and driver) and of the driver alone.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import tempfile
import threading
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
import numpy as np

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.kinds import FAULTY_LINK, PFC_PAUSED, PFC_PAUSING, PFC_STORM, QUEUE_BUILDUP
from pipeline.metrics import metric_id
from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.topology.model import Topology, spine_leaf
from pipeline.wire.actions import decode_actions
from pipeline.wire.samples import encode_batch

NS = 1_000_000_000
T0 = 1_900_000_000 * NS
GROUP_WAIT_S = 30.0
CONFIRM_S = 30.0
#: the symptoms a spreading storm raises on a port
SYMPTOMS = (PFC_PAUSED, PFC_PAUSING, QUEUE_BUILDUP)
_FILL = ("if_in_octets", "if_out_octets", "if_in_fcs_errors", "if_in_symbol_errors",
         "fec_uncorrectable_blocks", "if_carrier_transitions", "if_in_pkts", "if_out_pkts")


class _Skips(logging.Handler):
    """Counts the scheduler's "maximum number of running instances reached" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "maximum number of running instances" in record.getMessage():
            self.count += 1


def _serve(conn: Any) -> None:
    """The webhook receiver, in a process of its own (its CPU is not the service's): answers
    200 over keep-alive connections, notes when (monotonic wall clock, shared by the processes)
    each fingerprint was first told it fires, and hands that back when told to stop."""
    first_wall: dict[str, float] = {}
    posts = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            now = time.monotonic()
            with lock:
                posts[0] += 1
                for a in body.get("alerts", ()):
                    if a.get("status") == "firing":
                        first_wall.setdefault(a["fingerprint"], now)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    conn.send(server.server_address[1])
    conn.recv()
    server.shutdown()
    with lock:
        conn.send((dict(first_wall), posts[0]))


@dataclass
class _Peer:
    """The receiver's process, and what it saw."""

    first_wall: dict[str, float] = field(default_factory=dict)
    posts: int = 0
    _conn: Any = None
    _proc: Any = None

    def start(self) -> str:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        return f"http://127.0.0.1:{self._conn.recv()}"

    def stop(self) -> None:
        self._conn.send("stop")
        self.first_wall, self.posts = self._conn.recv()
        self._proc.join(10)


def _samples(topology: Topology, per_port: int) -> list[SampleBatch]:
    """One batch per switch: oper and admin status of every port, then port counters, then PFC
    frames per priority (the rows a fabric streams, ~30 per port)."""
    rows = [(metric_id("if_oper_status"), -1), (metric_id("if_admin_status"), -1),
            *((metric_id(m), -1) for m in _FILL),
            *((metric_id(m), q) for q in range(8) for m in ("pfc_rx_frames", "pfc_tx_frames")),
            *((metric_id("queue_tx_octets"), q) for q in range(8))][:max(2, per_port)]
    metric = np.array([m for m, _ in rows], np.uint16)
    qual = np.array([q for _, q in rows], np.int16)
    out = []
    for device in topology.switches:
        names = tuple(p.name for p in topology.ports(device))
        n, k = len(names), len(rows)
        out.append(SampleBatch(
            np.zeros(n * k, np.int64), np.zeros(n * k, np.int32),
            np.repeat(np.arange(n, dtype=np.int32), k), np.tile(metric, n), np.tile(qual, n),
            np.ones(n * k, np.float64), np.zeros(n * k, np.uint8), (device,), names))
    return out


#: stand-ins in an alert's JSON for the times each publication fills in
_UPDATED, _ENDS = 1_234_567_890_123_456_789, b'"ends_ns":null'


@dataclass
class _Storm:
    """The alert stream: a storm's symptoms spreading over ports, and a corrupting link. Each
    alert's JSON is made once; a publication only writes its times in (the driver must cost
    little beside the service it feeds)."""

    topology: Topology
    per_step: int
    ports: list[tuple[str, str]] = field(init=False)
    #: (kind, port) → (fingerprint, JSON with the stand-ins)
    templates: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    first_ns: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = [(kind, str(p)) for kind in SYMPTOMS for d in self.topology.switches
                 for p in self.topology.ports(d)]
        order = np.random.default_rng(7).permutation(len(ports))
        self.ports = [ports[i] for i in order[: self.per_step]]
        host = self.topology.hosts[0]
        link = self.topology.links[len(self.topology.links) // 2]
        self.storm = Alert(name=PFC_STORM, entity=host.name, severity=Severity.CRITICAL,
                           ports=(str(host.port),), confidence=0.9, starts_ns=T0,
                           updated_ns=_UPDATED, source="correlator")
        self.link = Alert(name=FAULTY_LINK, entity=link.id, severity=Severity.CRITICAL,
                          ports=tuple(str(p) for p in link.ends()), confidence=0.9,
                          starts_ns=T0, updated_ns=_UPDATED, source="correlator")
        self.roots = [self._template(a) for a in (self.storm, self.link)]

    @staticmethod
    def _template(alert: Alert) -> tuple[str, bytes]:
        return alert.fingerprint, alert.model_dump_json().encode()

    def step(self, k: int, steps: int, t_ns: int) -> tuple[bytes, int]:
        """The message published at step ``k`` (event time ``t_ns``) and its alert count."""
        firing = self.ports[: min(len(self.ports), (k + 1) * -(-len(self.ports) // 3))]
        chosen = list(self.roots)
        for i, key in enumerate(firing):
            tmpl = self.templates.get(key)
            if tmpl is None:
                kind, port = key
                tmpl = self.templates[key] = self._template(Alert(
                    name=kind, entity=port, severity=Severity.WARNING, ports=(port,),
                    root_cause=False, starts_ns=t_ns, updated_ns=_UPDATED, source=kind,
                    inhibited_by=None if i % 10 == 0 else self.storm.fingerprint))
            chosen.append(tmpl)
        stamp = str(t_ns).encode()
        ends = b'"ends_ns":' + stamp if k == steps - 1 else _ENDS
        parts = []
        for fp, text in chosen:
            self.first_ns.setdefault(fp, t_ns)
            parts.append(text.replace(str(_UPDATED).encode(), stamp).replace(_ENDS, ends))
        return b"[" + b",".join(parts) + b"]", len(parts)


def _event_at(wall: float, pace: list[tuple[float, int]]) -> int:
    """The event time at a wall instant, from the driver's (wall, event) marks."""
    i = max(0, min(len(pace) - 1, bisect_left([w for w, _ in pace], wall) - 1))
    w, e = pace[i]
    speed = (pace[-1][1] - pace[0][1]) / NS / max(1e-9, pace[-1][0] - pace[0][0])
    return e + int((wall - w) * speed * NS)


def _pcts(values: list[float]) -> str:
    if not values:
        return "none"
    a = np.array(values)
    return (f"p50 {np.percentile(a, 50):.1f} s  p99 {np.percentile(a, 99):.1f} s  "
            f"max {a.max():.1f} s  (n={len(a)})")


def run_once(topology: Topology, rate_per_min: float, speed: float, interval_s: float,
             duration_s: float, per_port: int) -> dict[str, Any]:
    from remediation.service import Remediation
    from remediation.settings import RemediationSettings

    skips = _Skips()
    logging.getLogger("apscheduler").addHandler(skips)
    peer = _Peer()
    url = peer.start()
    work = Path(tempfile.mkdtemp(prefix="rocewatch-bench-remediate-"))
    settings = RemediationSettings.model_validate({
        "mode": "dry_run", "notify": "all", "state_path": str(work / "state.json"),
        "receivers": [{"type": "webhook", "name": "hook", "url": url}],
        "route": {"group_wait": f"{GROUP_WAIT_S}s", "group_interval": "5m"},
        "guards": {"confirm": f"{CONFIRM_S}s", "cooldown": "0s", "halt_incidents": 100}})
    bus, topics = MemoryBus(capacity=100_000), Topics("bench.")
    service = Remediation(settings, bus, topics, topology)
    audit = bus.consumer([topics.actions], "bench-audit")
    stop = threading.Event()
    loop = threading.Thread(target=service.run, args=(stop,), name="bench-remediate")
    loop.start()
    producer = bus.producer()
    storm = _Storm(topology, max(1, int(rate_per_min * interval_s / 60)))
    samples = _samples(topology, per_port)
    steps = int(duration_s / interval_s)
    pace: list[tuple[float, int]] = []
    published = 0
    cpu0, driver0 = time.process_time(), time.thread_time()
    wall0 = time.monotonic()
    for k in range(steps):
        t_ns = T0 + int(k * interval_s * NS)
        due = wall0 + k * interval_s / speed
        time.sleep(max(0.0, due - time.monotonic()))
        pace.append((time.monotonic(), t_ns))
        for batch in samples:
            batch.ts_ns[:] = t_ns
            producer.send(topics.samples, encode_batch(batch), key=batch.devices[0].encode())
        message, count = storm.step(k, steps, t_ns)
        producer.send(topics.alerts, message, key=b"detect")
        published += count
    pace.append((wall0 + steps * interval_s / speed, T0 + int(steps * interval_s * NS)))
    driver_cpu = time.thread_time() - driver0
    deadline = time.monotonic() + 60
    while service.stats.alerts < published and time.monotonic() < deadline:
        time.sleep(0.05)
    taken_s = time.monotonic() - wall0
    service.alerting.deliverer.drain(30)
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    health = service.health()
    stop.set()
    loop.join(30)
    records: list[ActionResult] = []
    while msgs := audit.poll(0.05, 100_000):
        for msg in msgs:
            records.extend(decode_actions(msg.value).items)
    peer.stop()
    logging.getLogger("apscheduler").removeHandler(skips)

    incidents = {storm.storm.fingerprint, storm.link.fingerprint}
    lags: dict[str, list[float]] = {k: [] for k in ("incident_flush", "incident_delivery",
                                                   "symptom_flush", "symptom_delivery")}
    for r in records:
        if r.action == "notify" and r.outcome == "done" and "new_alerts" in r.detail:
            for fp in r.alert_fingerprint.split(","):
                if fp in storm.first_ns:
                    kind = "incident" if fp in incidents else "symptom"
                    lags[f"{kind}_flush"].append((r.at_ns - storm.first_ns[fp]) / NS)
    for fp, wall_at in peer.first_wall.items():
        if fp in storm.first_ns:
            kind = "incident" if fp in incidents else "symptom"
            lags[f"{kind}_delivery"].append((_event_at(wall_at, pace) - storm.first_ns[fp]) / NS)
    decided = [r for r in records if r.action == "drain" and r.outcome == "done"]
    decision = (decided[0].at_ns - storm.link.starts_ns) / NS - CONFIRM_S if decided else None
    bar = GROUP_WAIT_S + interval_s
    beat = health.get("heartbeat", {})
    return {
        "alerts": published, "alerts_per_s": published / max(1e-9, taken_s), **lags,
        "late": sum(1 for x in lags["incident_delivery"] if x > bar), "bar_s": bar,
        "decision_lag_s": decision, "posts": peer.posts, "jobs": health["jobs"],
        "job_errors": health["job_errors"], "skipped": skips.count,
        "longest_run_s": {k: v["longest_s"] for k, v in beat.items()},
        "behind": {k: v["behind"] for k, v in beat.items() if v["behind"]},
        "cpu_per_s": cpu / wall, "driver_cpu_per_s": driver_cpu / wall, "wall_s": wall,
        "samples_per_s": sum(len(b) for b in samples) * steps / wall,
    }


@click.command()
@click.option("--cases", default="1000@20,100000@20,100000@1", show_default=True,
              help="RATE@SPEED, comma-separated: alert state changes per minute of event time, "
                   "at event seconds per wall second")
@click.option("--interval", "interval_s", default=10.0, show_default=True,
              help="sample interval (event seconds)")
@click.option("--duration", "duration_s", default=120.0, show_default=True,
              help="event seconds per case")
@click.option("--spines", default=16, show_default=True)
@click.option("--leaves", default=96, show_default=True)
@click.option("--hosts-per-leaf", default=32, show_default=True)
@click.option("--metrics-per-port", default=10, show_default=True,
              help="sample rows per port and interval (2: status only)")
def remediate(cases: str, interval_s: float, duration_s: float, spines: int, leaves: int,
              hosts_per_leaf: int, metrics_per_port: int) -> None:
    """Alerts/s through remediation's lifecycle and its notification lag, in event time."""
    logging.getLogger("rocewatch").setLevel(logging.ERROR)
    topology = spine_leaf(spines, leaves, hosts_per_leaf)
    ports = sum(len(topology.ports(d)) for d in topology.switches)
    click.echo(f"fabric: {len(topology.switches)} switches, {ports} switch ports; interval "
               f"{interval_s:g} s, {duration_s:g} s of event time per case; group_wait "
               f"{GROUP_WAIT_S:g} s, confirm {CONFIRM_S:g} s; notify: all")
    for case in cases.split(","):
        rate_text, _, speed_text = case.partition("@")
        rate, speed = float(rate_text), float(speed_text or 1)
        r = run_once(topology, rate, speed, interval_s, duration_s, metrics_per_port)
        click.echo(f"\n{rate:,.0f} alerts/min of event time at speed {speed:g}: "
                   f"{r['alerts']:,} alerts, {r['samples_per_s']:,.0f} samples/s, "
                   f"{r['wall_s']:.1f} s wall")
        click.echo(f"  through the lifecycle: {r['alerts_per_s']:,.0f} alerts/s (wall); "
                   f"{r['posts']:,} webhook posts")
        click.echo(f"  first notice, event time after first publication (bar {r['bar_s']:g} s):")
        for kind in ("incident", "symptom"):
            click.echo(f"    {kind + 's':9s} flushed {_pcts(r[kind + '_flush'])}")
            click.echo(f"    {'':9s} delivered {_pcts(r[kind + '_delivery'])}")
        click.echo(f"    incidents delivered over the bar: {r['late']}")
        lag = r["decision_lag_s"]
        click.echo("  drain decision: " + ("none" if lag is None else
                                           f"{lag:.1f} s (event) after its schedule"))
        click.echo(f"  jobs: runs {r['jobs']}, errors {r['job_errors'] or 'none'}, longest run "
                   f"{r['longest_run_s'] or 'n/a'} s, began a period late "
                   f"{r['behind'] or 'none'}; skipped (max instances) {r['skipped']}")
        click.echo(f"  CPU: {r['cpu_per_s']:.2f} s/s this process, of which the driver "
                   f"{r['driver_cpu_per_s']:.2f} s/s")
