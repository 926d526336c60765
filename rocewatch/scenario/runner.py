"""The scenario runner: the lab, the whole platform on top of it, and the run report.

``run_scenario`` starts the lab from a scenario file, writes the collectors' inventory from the
lab's ``agents.json``, and runs the platform exactly as it would run against real switches
(:class:`rocewatch.app.Platform` with every role: collectors over the lab's real gNMI and SNMP
agents, ingest into an embedded chDB store in a temporary directory, detection, remediation in its
configured mode, the API). A consumer of its own reads the alerts and actions topics. When the
scenario's simulated time is over and detection has caught up with it, everything stops and the
run report is written in the format of ``shared/scenarios/README.md``: times are simulated
seconds from the scenario's start (event time − the lab's epoch), and the score comes from
:mod:`rocewatch.scenario.scoring`.
"""

from __future__ import annotations

import atexit
import json
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.bus.base import Consumer, Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import merge, read_yaml
from pipeline.errors import StoreError
from pipeline.model import ActionResult, Alert, Severity
from pipeline.topology.model import Topology
from pipeline.wire.actions import decode_actions
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.deadletter import DeadLetter, DeadLetters
from rocewatch.scenario.machine import idle_share, speed_factor
from rocewatch.scenario.scoring import score

log = logging.getLogger("rocewatch.scenario.runner")

_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


@dataclass
class Gathered:
    """What the platform published during a run."""

    alerts: list[Alert] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    #: what the report could not read (the platform's own consumers dead-lettered it)
    letters: DeadLetters = field(default_factory=lambda: DeadLetters("scenario-report"))

    @property
    def undecodable(self) -> int:
        return self.letters.stats.parked

    def take(self, consumer: Consumer, topics: Topics, timeout_s: float = 0.2) -> int:
        msgs = consumer.poll(timeout_s=timeout_s, max_records=5000)
        for msg in msgs:
            if msg.topic == topics.alerts:
                alerts = self.letters.read_items(msg, decode_alerts)
                if not isinstance(alerts, DeadLetter):
                    self.alerts.extend(alerts.items)
            elif msg.topic == topics.actions:
                actions = self.letters.read_items(msg, decode_actions)
                if not isinstance(actions, DeadLetter):
                    self.actions.extend(actions.items)
        if msgs:
            consumer.commit()
        return len(msgs)


def topology_json(topology: Topology) -> dict[str, Any]:
    """The report's topology: links with both ends, hosts with their leaf port."""
    return {"links": [{"id": ln.id, "a": str(ln.a), "b": str(ln.b)} for ln in topology.links],
            "hosts": [{"name": h.name, "port": str(h.port)} for h in topology.hosts]}


def detection_sources() -> frozenset[str]:
    """Who speaks about the fabric on the alerts topic: the detectors, the correlator and the
    topology watch (the remediation stage publishes its own operational alerts there too, e.g. a
    halted automation)."""
    from detectors.topology import SOURCE as TOPOLOGY
    from pipeline.registry import Registry

    return frozenset([*Registry("rocewatch.detectors").names(), "correlator", TOPOLOGY])


def alert_entries(messages: Iterable[Alert], epoch_ns: int, end_s: float) -> list[dict[str, Any]]:
    """One entry per episode of each of the fabric's findings (a fingerprint from firing to
    resolved; raised again later, it is a new page and a new entry), from its published states in
    order: ``first_s`` is when the episode was raised, ``last_s`` when it resolved (or the run's
    end), the verdict is the last one published, the severity the highest it reached. An episode
    raised after the run's end is not the run's: while detection catches up the lab runs on and
    then stops, and what it says of that is outside the scenario's time."""
    sources = detection_sources()
    episodes: list[list[Alert]] = []
    open_: dict[str, list[Alert]] = {}
    for alert in messages:
        if alert.source not in sources:
            continue
        states = open_.get(alert.fingerprint)
        if states is None:
            states = open_[alert.fingerprint] = []
            episodes.append(states)
        states.append(alert)
        if alert.ends_ns is not None:
            del open_[alert.fingerprint]
    out = []
    for states in episodes:
        first, last = states[0], states[-1]
        raised = first.updated_ns if first.firing else first.starts_ns
        if raised - epoch_ns > end_s * 1e9:
            continue
        ended = last.ends_ns
        severity = max((s.severity for s in states), key=lambda s: _SEVERITY_RANK[s])
        out.append({
            "kind": last.name, "entity": last.entity, "ports": list(last.ports),
            "first_s": round((raised - epoch_ns) / 1e9, 3),
            "last_s": round((ended - epoch_ns) / 1e9, 3) if ended is not None else end_s,
            "severity": severity.value, "root_cause": last.root_cause,
        })
    out.sort(key=lambda a: (not a["root_cause"], a["first_s"], a["kind"], a["entity"]))
    return out


def action_entries(actions: Iterable[ActionResult], epoch_ns: int,
                   alerts: Iterable[Alert] = ()) -> list[dict[str, Any]]:
    """Actions in the report's shape. An action's entity is what it acted on: a drain's link, a
    notification's alert entity (its target is the receiver, which the format has no room for)."""
    entity_of = {a.fingerprint: a.entity for a in alerts}
    return [{"action": a.action,
             "entity": entity_of.get(a.alert_fingerprint, a.target)
             if a.action == "notify" else a.target,
             "at_s": round((a.at_ns - epoch_ns) / 1e9, 3),
             "mode": a.mode, "outcome": a.outcome}
            for a in sorted(actions, key=lambda a: a.at_ns)]


def build_report(name: str, sample_interval_s: float, topology: Topology,
                 truth: list[dict[str, Any]], gathered: Gathered, epoch_ns: int,
                 duration_s: float) -> dict[str, Any]:
    report: dict[str, Any] = {
        "format": 1,
        "scenario": name,
        "sample_interval_s": sample_interval_s,
        "topology": topology_json(topology),
        "truth": [{"kind": t["kind"], "target": t["target"], "start_s": t["start_s"],
                   "end_s": t["end_s"]} for t in truth],
        "alerts": alert_entries(gathered.alerts, epoch_ns, duration_s),
        "actions": action_entries(gathered.actions, epoch_ns, gathered.alerts),
    }
    report["score"] = score(report).report()
    return report



def process_chdb_dir() -> Path:
    """The chDB data directory of this process: chDB allows one per process, so every run of a
    suite shares it (each with a database of its own)."""
    global _CHDB_DIR
    if _CHDB_DIR is None:
        _CHDB_DIR = Path(tempfile.mkdtemp(prefix="rocewatch-chdb-"))
        atexit.register(shutil.rmtree, _CHDB_DIR, True)
    return _CHDB_DIR


_CHDB_DIR: Path | None = None


def platform_config(config_path: str | None, work: Path, agents_file: Path,
                    te_url: str, protocols: set[str], chdb_path: Path | None = None,
                    database: str = "rocewatch") -> dict[str, Any]:
    """The user's config (remediation mode, receivers, detectors...) with what a run must own:
    an in-process bus, a fresh embedded store, collectors over the lab's agents, the TE
    controller and gNMI targets of the lab, an API on a free port."""
    data = read_yaml(config_path) if config_path else {}
    collectors = [{"type": proto, "name": f"lab-{proto}", "agents": str(agents_file)}
                  for proto in sorted(protocols)]
    if "gnmi" in protocols:  # the switches' buffer configuration, read with gNMI Get
        collectors.append({"type": "gnmi_buffer_config", "name": "lab-gnmi-config",
                           "agents": str(agents_file)})
    return merge(data, {
        "topology": "",
        "bus": {"kind": "memory"},
        "store": {"kind": "chdb", "chdb_path": str(chdb_path or process_chdb_dir()),
                  "database": database},
        "api": {"host": "127.0.0.1", "port": 0},
        "collectors": collectors,
        "remediation": {"te_controller": te_url,
                        "state_path": str(work / "remediation-state.json"),
                        "gnmi": {"lab_agents_file": str(agents_file)}},
    })


def _agents_file(lab: Any, work: Path) -> Path:
    agents = lab.agents()
    if isinstance(agents, Mapping):
        path = work / "agents.json"
        path.write_text(json.dumps(agents, indent=1))
        return path
    return Path(agents)


def _protocols(agents_file: Path) -> set[str]:
    data = json.loads(agents_file.read_text())
    out = set()
    for switch in data.get("switches", []):
        out |= {p for p in ("gnmi", "snmp") if switch.get(p)}
    return out or {"gnmi"}


#: SNMP varbinds per wall second one collector process decodes in a scenario run, beside the lab
#: and the rest of the platform on a 2-core machine: an SNMP-only fabric of 6 switches (2,240
#: varbinds a poll) drifted to 1.3-2 s between polls of a 1 s cadence at speed 5 (5.6-8.6 k/s;
#: alone, the collector decodes 68-112 k/s, docs/benchmarks.md)
SNMP_RUN_BUDGET = 6_000.0
#: varbinds one poll reads per port with the SNMP profile: 14 interface columns, 4 PFC columns
#: per priority, 3 queue statistics per queue
SNMP_VARBINDS_PER_PORT = 14 + 4 * 8 + 3 * 8


def harness_speed(scenario: Any, requested: float, idle: float = 1.0) -> float:
    """The speed a run can go while the SNMP polls keep the scenario's cadence in simulated time,
    on a machine ``idle`` (0..1) idle (:mod:`rocewatch.scenario.machine`).

    A poll cycle that takes longer than ``sample_interval_s / speed`` of wall time stretches the
    simulated interval between samples, so detection would be measured on a slower cadence than
    the scenario's; slowing the clock instead keeps the measurement the scenario's own. A busy
    machine has less of everything (the budget above was measured on a quiet one), so both the
    asked speed and the SNMP budget shrink with what is idle."""
    from lab.inventory import plan_agents

    share = speed_factor(idle)
    topo = scenario.topology()
    varbinds = sum(len(topo.ports(p.switch)) * SNMP_VARBINDS_PER_PORT
                   for p in plan_agents(scenario) if p.protocol == "snmp")
    if not varbinds:
        return requested * share
    return share * min(requested, SNMP_RUN_BUDGET * float(scenario.sample_interval_s) / varbinds)


def run_scenario(path: str | Path, speed: float = 10.0, config_path: str | None = None,
                 keep: Path | None = None, catch_up_s: float = 20.0,
                 chdb_path: Path | None = None, fit_machine: bool = False) -> dict[str, Any]:
    """Run one scenario end to end through the real platform; returns the run report.

    ``chdb_path`` is the process's chDB directory (default: one temporary directory per
    process); the run gets a database of its own in it, dropped afterwards. ``fit_machine``
    looks at how busy the machine is first and slows the run on a busy one (the CLI does;
    tests ask for their speed)."""
    from lab.runtime import Lab
    from lab.scenario.load import load_scenario
    from rocewatch.app import ALL_ROLES, Platform
    from rocewatch.settings import load_settings

    scenario = load_scenario(path)
    idle = idle_share() if fit_machine else 1.0
    fitted = harness_speed(scenario, speed, idle)
    if fitted < speed:
        log.warning("%s: speed %.3g instead of %.3g, so its %.3g s cadence is kept (the SNMP "
                    "polls' budget and the machine's idle share, %.0f%%)", scenario.name, fitted,
                    speed, scenario.sample_interval_s, 100 * idle)
        speed = fitted
    settings_now = load_settings(None, overrides=read_yaml(config_path) if config_path else {})
    _warm_up(settings_now)
    work = Path(tempfile.mkdtemp(prefix="rocewatch-scenario-"))
    lab = Lab(scenario, speed=speed, out_dir=str(work / "lab"), base_port=0)
    platform: Platform | None = None
    gathered = Gathered()
    try:
        lab.start()
        agents_file = _agents_file(lab, work)
        database = f"scenario_{uuid.uuid4().hex[:12]}"
        overrides = platform_config(config_path, work, agents_file, lab.te_url,
                                    _protocols(agents_file), chdb_path, database)
        settings = load_settings(None, overrides=overrides)
        topics = Topics(settings.bus.topic_prefix)
        bus = MemoryBus(partitions=settings.bus.partitions, capacity=settings.bus.capacity)
        bus.ensure_topics(topics.all())
        reader = bus.consumer([topics.alerts, topics.actions], "scenario-report")
        platform = Platform(settings, ALL_ROLES, lab.topology, bus=bus)
        platform.start()
        end_ns = lab.epoch_ns + int(scenario.duration_s * 1e9)
        while lab.sim_time() < scenario.duration_s:
            gathered.take(reader, topics, timeout_s=0.2)
        _catch_up(platform, end_ns, scenario.sample_interval_s, catch_up_s, reader, topics,
                  gathered)
        platform.stop()
        platform = None
        _drop_database(settings)
        while gathered.take(reader, topics, timeout_s=0.2):
            pass
        return build_report(scenario.name, scenario.sample_interval_s, lab.topology,
                            list(lab.truth()), gathered, lab.epoch_ns, scenario.duration_s)
    finally:
        if platform is not None:
            platform.stop()
        lab.stop()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copytree(work, keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def _drop_database(settings: Any) -> None:
    """The run's store database goes with the run (the process's chDB directory stays)."""
    from pipeline.store.base import open_store

    try:
        store = open_store(settings.store)
        try:
            store.execute(f"DROP DATABASE IF EXISTS {store.database}")
        finally:
            store.close()
    except StoreError as exc:
        log.warning("could not drop the run's database: %s", exc)


def _warm_up(settings: Any) -> None:
    """Import what the roles will import, and build the detectors once, before the lab's clock
    starts: at ``--speed 10`` every wall second of start-up is ten simulated seconds in which the
    platform would be blind."""
    from detectors.chain import build_detectors
    from rocewatch.app import ROLES

    for load in ROLES.values():
        load()
    build_detectors(settings.detection, None)


def _catch_up(platform: Any, end_ns: int, interval_s: float, limit_s: float, reader: Consumer,
              topics: Topics, gathered: Gathered) -> None:
    """Wait (wall time, bounded) until detection has seen the scenario's last samples."""
    want = end_ns - int(1.5 * interval_s * 1e9)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        gathered.take(reader, topics, timeout_s=0.2)
        detect = platform.health().get("detect", {})
        if int(detect.get("now_ns", 0)) >= want:
            break
    else:
        log.warning("detection did not catch up with the scenario's end within %.0f s", limit_s)
    # one more sample interval of wall time lets the last alerts and actions reach the bus
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        gathered.take(reader, topics, timeout_s=0.1)
