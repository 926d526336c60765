"""What ``bench fabric`` runs: the scenario (a fabric, its traffic, and the three faults the
benchmark injects into it), the receiver that hears the notifications, and what the run found.

The scenario is the one given (the 24,576-GPU reference by default) with, optionally, its fabric
resized, and its own faults replaced by three the benchmark places: a PFC storm from a host, a
corrupting link (an aggregation link when the fabric has aggregation switches) and a leaf-spine
link that goes down, one after the other ``gap`` intervals apart, so each is seen alone; the run
goes on after the last for its notification (the route's ``group_wait`` and three intervals).
Their targets are chosen from the topology by position (the same fabric, the same targets).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from pipeline.config import read_yaml
from pipeline.errors import LabError
from pipeline.kinds import FAULT_LINK_CORRUPTION, FAULT_LINK_DOWN, FAULT_PFC_STORM
from pipeline.topology.model import Topology

#: the fabric keys a command line may resize
RESIZE = ("zones", "spines", "leaves", "hosts_per_leaf", "aggs")


@dataclass(frozen=True)
class Faults:
    """Where and when (simulated seconds) the three faults go."""

    at_s: float
    gap_s: float
    storm_s: float
    storm: str
    corruption: str
    down: str
    #: simulated time after the last fault for its detection and notification
    tail_s: float

    @property
    def end_s(self) -> float:
        """The last fault's start and the time its notification needs after it."""
        return self.at_s + 2 * self.gap_s + max(self.gap_s, self.tail_s)

    def entries(self) -> list[dict[str, Any]]:
        at, gap = self.at_s, self.gap_s
        return [
            {"kind": FAULT_PFC_STORM, "target": self.storm, "at_s": at,
             "until_s": at + self.storm_s, "params": {"priority": 3}},
            {"kind": FAULT_LINK_CORRUPTION, "target": self.corruption, "at_s": at + gap,
             "params": {"rate": 1.0e-5, "direction": "both"}},
            {"kind": FAULT_LINK_DOWN, "target": self.down, "at_s": at + 2 * gap},
        ]


def pick_targets(topology: Topology) -> tuple[str, str, str]:
    """A host for the storm, a link to corrupt and a leaf-spine link to take down."""
    hosts = topology.hosts
    roles = {d: topology.role(d) for d in topology.switches}
    fabric = [ln for ln in topology.links
              if {roles.get(ln.a.device), roles.get(ln.b.device)} == {"leaf", "spine"}]
    aggs = [ln for ln in topology.links if "agg" in (roles.get(ln.a.device),
                                                     roles.get(ln.b.device))]
    if not hosts or len(fabric) < 2:
        raise LabError("bench fabric needs hosts and at least two leaf-spine links")
    corrupt = (aggs or fabric)[len(aggs or fabric) * 2 // 3]
    down = fabric[len(fabric) // 2 + 1]
    if down.id == corrupt.id:
        down = fabric[len(fabric) // 2]
    return hosts[len(hosts) // 3].name, corrupt.id, down.id


def plan_scenario(base: Path, work: Path, resize: dict[str, int], interval_s: float | None,
                  fault_at: float, gap: int, tail_s: float) -> tuple[Path, Faults]:
    """The scenario file the run uses (in ``work``), and its faults."""
    from lab.scenario.load import load_scenario

    data: dict[str, Any] = read_yaml(base)
    data["fabric"] = {**data["fabric"], **{k: v for k, v in resize.items() if v}}
    if interval_s:
        data["sample_interval_s"] = interval_s
    data["faults"] = []
    data["name"] = f"{data['name']}-bench"
    plain = work / "fabric-plain.yaml"
    plain.write_text(yaml.safe_dump(data, sort_keys=False))
    interval = float(data["sample_interval_s"])
    storm, corruption, down = pick_targets(load_scenario(plain).topology())
    faults = Faults(fault_at * interval, gap * interval, (gap + 2) * interval, storm,
                    corruption, down, tail_s + 3 * interval)
    data["faults"] = faults.entries()
    data["duration_s"] = max(float(data.get("duration_s", 0)), faults.end_s + 60 * interval)
    path = work / "fabric.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    plain.unlink()
    return path, faults


class Hook:
    """A webhook receiver on loopback: when each firing alert (by fingerprint) was first
    notified, on the monotonic clock (one clock for every process of the machine)."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.posts = 0
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                now = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hook.heard(body, now)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, name="bench-hook",
                                        daemon=True)

    def heard(self, body: bytes, now: float) -> None:
        with self._lock:
            self.posts += 1
            try:
                alerts = json.loads(body).get("alerts", [])
            except ValueError:
                return
            for alert in alerts:
                if alert.get("status") == "firing" and alert.get("fingerprint"):
                    self.first.setdefault(str(alert["fingerprint"]), now)

    def __enter__(self) -> Hook:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def findings(report: dict[str, Any], truth: list[dict[str, Any]],
             interval_s: float) -> list[dict[str, Any]]:
    """Per injected fault: found with the right entity, time to detect (intervals) and to
    notify (simulated seconds), by the platform's one scoring rule."""
    from pipeline.kinds import FAULT_TO_INCIDENT
    from rocewatch.scenario.scoring import names_target, score

    scored = score({"sample_interval_s": interval_s, "truth": truth,
                    "alerts": report["entries"]})
    out = []
    for t in scored.truths:
        want = FAULT_TO_INCIDENT.get(t.kind, t.kind)
        notified = [report["notified_s"][a["fingerprint"]] for a in report["alerts"]
                    if a["kind"] == want and names_target(a, t.target)
                    and a["fingerprint"] in report["notified_s"]
                    and a["raised_s"] >= t.start_s - interval_s]
        out.append({"kind": t.kind, "target": t.target, "found": t.detected,
                    "ttd_intervals": None if t.ttd_s is None else t.ttd_s / interval_s,
                    "notify_s": min(notified) - t.start_s if notified else None})
    return out
