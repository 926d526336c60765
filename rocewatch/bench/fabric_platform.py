"""The platform side of ``bench fabric``: every role in one process, metered, and what it found.

The child interpreter runs :class:`rocewatch.app.Platform` with every role (collect, ingest,
detect, remediate, api) on the in-process bus and the embedded chDB store, as ``rocewatch run``
would, over the source's agents (:mod:`rocewatch.bench.fabric_source`). Beside the roles, and
booked apart, the benchmark's own threads (named ``bench-``): one reads the alerts and actions
topics (straight from the bus, unmetered), one keeps the pace of simulated time (the lab's
snapshot ring says how far the simulation has got) and pairs the followed samples messages with
their commits (:mod:`rocewatch.bench.fabric_meter`). The parent speaks to it in JSON lines on
standard input: ``mark`` starts the measurement window, ``report`` answers what happened since,
``api`` times the fabric views, ``stop`` (or the end of input) stops it.
"""

from __future__ import annotations

import bisect
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from rocewatch.bench.fabric_meter import MeteredBus, ThreadCpu
from rocewatch.scenario.runner import alert_entries

PLATFORM_CHILD = "from rocewatch.bench.fabric_platform import platform_main; platform_main()"
#: the consumer groups of the samples topic whose commits the benchmark follows, by stage
GROUPS = {"ingest": "ingest+store", "detect": "detect", "remediation-telemetry": "remediate"}


class Pace:
    """Simulated time against the monotonic wall clock, read from the lab's snapshot ring."""

    def __init__(self, block: str, size: int, slots: int) -> None:
        from lab.sim.snapshot_ring import SharedBlock

        self._block = SharedBlock(size, name=block, slots=slots)
        self.marks: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def sim_s(self) -> float:
        from lab.sim.snapshot_ring import C_LIVE_TIME

        return float(self._block.ctrl[C_LIVE_TIME])

    def mark(self) -> None:
        with self.lock:
            self.marks.append((time.monotonic(), self.sim_s()))

    def wall_of(self, sim_s: float) -> float:
        """The monotonic wall second at which the simulation reached ``sim_s``."""
        with self.lock:
            marks = list(self.marks)
        if not marks:
            return float("nan")
        sims = [s for _, s in marks]
        i = bisect.bisect_left(sims, sim_s)
        if i <= 0:
            return marks[0][0] - (marks[0][1] - sim_s)
        if i >= len(marks):
            return marks[-1][0] + (sim_s - marks[-1][1])
        (w0, s0), (w1, s1) = marks[i - 1], marks[i]
        return w0 + (w1 - w0) * ((sim_s - s0) / (s1 - s0) if s1 > s0 else 0.0)

    def close(self) -> None:
        self._block.close()


def _rss_mib() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def _pcts(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    a = np.asarray(values)
    return {"p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "max": float(a.max()), "n": len(values)}


class Bench:
    """The platform, and everything the benchmark watches in it."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        from pipeline.model import Alert
        from pipeline.topology.model import Topology
        from rocewatch.app import ALL_ROLES, Platform
        from rocewatch.settings import load_settings

        self.cfg = cfg
        self.epoch_ns = int(cfg["epoch_ns"])
        settings = load_settings(None, overrides=cfg["settings"])
        self.topics = Topics(settings.bus.topic_prefix)
        inner = MemoryBus(partitions=settings.bus.partitions, capacity=settings.bus.capacity)
        self.bus = MeteredBus(inner, self.topics.samples, list(GROUPS))
        self.bus.ensure_topics(self.topics.all())
        self.reader = inner.consumer([self.topics.alerts], "bench-report")
        self.seen: list[Alert] = []
        self.arrived: dict[str, float] = {}   # alert fingerprint → monotonic first seen firing
        self.pace = Pace(cfg["block"], cfg["size"], cfg["slots"])
        self.pace.mark()
        self.platform = Platform(settings, ALL_ROLES, Topology.load(cfg["topology"]), bus=self.bus)
        self.cpu = ThreadCpu(self.bus)
        self.stopping = threading.Event()
        self.lags: dict[str, list[tuple[int, int, int, int]]] = {g: [] for g in GROUPS}
        self._lags_lock = threading.Lock()
        self._mark: dict[str, Any] = {}
        #: rows of every samples message ingest committed since the start (never reset)
        self.committed_rows = 0

    def start(self) -> str:
        ctx = self.platform.start()
        self.cpu.start()
        for target, name in ((self._read_alerts, "bench-alerts"), (self._keep_pace, "bench-pace")):
            threading.Thread(target=target, name=name, daemon=True).start()
        deadline = time.monotonic() + 120
        while "api" not in ctx.health and time.monotonic() < deadline:
            time.sleep(0.1)
        return str(ctx.health["api"]()["url"]) if "api" in ctx.health else ""

    def _read_alerts(self) -> None:
        from pipeline.wire.alerts import decode_alerts

        while not self.stopping.is_set():
            msgs = self.reader.poll(timeout_s=0.2, max_records=5000)
            now = time.monotonic()
            for msg in msgs:
                if msg.value is None:
                    continue
                for alert in decode_alerts(msg.value).items:
                    self.seen.append(alert)
                    if alert.firing:
                        self.arrived.setdefault(alert.fingerprint, now)
            if msgs:
                self.reader.commit()

    def _keep_pace(self) -> None:
        while not self.stopping.wait(0.25):
            self.pace.mark()
            taken = self.bus.followed.take_lags()
            with self._lags_lock:
                self.committed_rows += sum(r[3] for r in taken.get("ingest", []))
                for group, rows in taken.items():
                    self.lags[group].extend(rows)

    def health(self) -> dict[str, Any]:
        return self.platform.health()

    # -- the commands ---------------------------------------------------------------------------

    def mark(self) -> dict[str, Any]:
        self.cpu.start()
        with self._lags_lock:
            self.lags = {g: [] for g in GROUPS}
        h = self.health()
        self._mark = {"wall": time.monotonic(), "sim_s": self.pace.sim_s(),
                      "collected": h.get("collect", {}).get("samples", 0),
                      "stored": h.get("ingest", {}).get("samples", 0)}
        return {"marked": self._mark["sim_s"]}

    def kept(self) -> dict[str, Any]:
        """Whether anything was lost: the store's rows against what ingest committed (the store
        has a message before ingest commits it; a sample sent twice is stored once, so the
        store may hold a few rows fewer), and the samples messages published over half a
        minute ago still uncommitted."""
        store = self.platform.context.store if self.platform.context else None
        with self._lags_lock:
            committed = self.committed_rows
        stored = None
        if store is not None:
            got = store.query(f"SELECT count() AS n FROM {store.database}.samples")
            stored = int(got["n"][0])
        return {"committed_rows": committed, "store_rows": stored,
                "stale": {g: self.bus.followed.stale(g, 30.0) for g in GROUPS}}

    def report(self) -> dict[str, Any]:
        cpu = self.cpu.read()
        h = self.health()
        sim_s = self.pace.sim_s() - self._mark["sim_s"]
        wall_s = time.monotonic() - self._mark["wall"]
        with self._lags_lock:
            lags = {g: list(v) for g, v in self.lags.items()}
        wall_of = self.pace.wall_of
        stage_lags: dict[str, Any] = {}
        published: list[float] = []
        for group, rows in lags.items():
            values = []
            for device_ns, commit_ns, sent_ns, _ in rows:
                device = wall_of((device_ns - self.epoch_ns) / 1e9)
                values.append(commit_ns / 1e9 - device)
                if group == "ingest":
                    published.append(sent_ns / 1e9 - device)
            stage_lags[GROUPS[group]] = _pcts(values)
        stage_lags["collect"] = _pcts(published)
        detect = h.get("detect", {})
        judged_s = (int(detect.get("now_ns", 0)) - self.epoch_ns) / 1e9
        collectors = {k: {f: v.get(f) for f in ("targets_total", "targets_up")}
                      for k, v in h.items() if k.startswith("collector.")}
        return {
            "sim_s": sim_s, "wall_s": wall_s, "cpu": cpu, "rss_mib": _rss_mib(),
            "collected": h.get("collect", {}).get("samples", 0) - self._mark["collected"],
            "stored": h.get("ingest", {}).get("samples", 0) - self._mark["stored"],
            "rows": {GROUPS[g]: sum(r[3] for r in v) for g, v in lags.items()},
            "lags": stage_lags, "detect_behind_s": time.monotonic() - wall_of(judged_s),
            "collectors": collectors, "ingest": h.get("ingest", {}),
            "kept": self.kept(), "bus_dropped": self.bus.inner.dropped,
            "undecodable": self.bus.followed.undecodable,
            "alerts": self.alerts(), "entries": alert_entries(list(self.seen), self.epoch_ns,
                                                              self.pace.sim_s()),
            "pace": self.pace.marks[-1] if self.pace.marks else None,
        }

    def alerts(self) -> list[dict[str, Any]]:
        """Each root-cause incident's first state: what it names, when it was raised (event
        seconds of the scenario), when it reached the benchmark's reader (seconds after the
        simulation reached that instant)."""
        out = []
        seen = set()
        for alert in list(self.seen):
            if not alert.root_cause or alert.fingerprint in seen or not alert.firing:
                continue
            seen.add(alert.fingerprint)
            raised_s = (alert.updated_ns - self.epoch_ns) / 1e9
            arrived = self.arrived.get(alert.fingerprint)
            out.append({"fingerprint": alert.fingerprint, "kind": alert.name,
                        "entity": alert.entity, "ports": list(alert.ports),
                        "source": alert.source, "raised_s": raised_s,
                        "published_after_s": None if arrived is None else
                        arrived - self.pace.wall_of(raised_s)})
        return out

    def notified(self, first_wall: dict[str, float]) -> dict[str, float]:
        """Per fingerprint, the simulated second at which the receiver was first told."""
        marks = list(self.pace.marks)
        walls = [w for w, _ in marks]
        out = {}
        for fp, wall in first_wall.items():
            i = max(1, min(len(marks) - 1, bisect.bisect_left(walls, wall)))
            (w0, s0), (w1, s1) = marks[i - 1], marks[i]
            out[fp] = s0 + (s1 - s0) * ((wall - w0) / (w1 - w0) if w1 > w0 else 0.0)
        return out

    def time_api(self, url: str, cases: list[tuple[str, str, dict[str, Any]]],
                 runs: int) -> dict[str, Any]:
        import httpx

        self.cpu.start()
        t0 = time.monotonic()
        out: dict[str, Any] = {}
        with httpx.Client(base_url=url, timeout=120) as http:
            for title, path, params in cases:
                times, size, status = [], 0, 0
                for _ in range(runs):
                    s = time.perf_counter()
                    resp = http.get(path, params=params)
                    times.append((time.perf_counter() - s) * 1000)
                    size, status = len(resp.content), resp.status_code
                times.sort()
                out[title] = {"p50_ms": times[len(times) // 2], "max_ms": times[-1],
                              "kib": size / 1024, "status": status}
        cpu = self.cpu.read()
        return {"cases": out, "wall_s": time.monotonic() - t0,
                "api_cpu_s": cpu.get("api", 0.0), "store_cpu_s": cpu.get("ingest+store", 0.0)}

    def stop(self) -> None:
        self.stopping.set()
        self.platform.stop()
        self.pace.close()


def platform_main() -> None:
    """``config.json``: the platform and its meters; commands on standard input."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="platform %(levelname)s %(name)s: %(message)s")
    cfg = json.loads(Path(sys.argv[1]).read_text())
    bench = Bench(cfg)
    url = bench.start()
    print(json.dumps({"api": url}), flush=True)
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            what = cmd.get("do")
            if what == "mark":
                answer: Any = bench.mark()
            elif what == "health":
                h = bench.health()
                answer = {k: {f: v.get(f) for f in ("targets_total", "targets_up", "now_ns",
                                                    "samples")}
                          for k, v in h.items() if isinstance(v, dict)}
            elif what == "report":
                answer = bench.report()
                answer["notified_s"] = bench.notified(cmd.get("first_wall", {}))
            elif what == "api":
                answer = bench.time_api(url, [(c[0], c[1], c[2]) for c in cmd["cases"]],
                                        int(cmd.get("runs", 5)))
            else:
                break
            print(json.dumps(answer), flush=True)
    finally:
        bench.stop()
