"""The wiring: build the bus, store and topology for a set of roles and supervise their loops.

Roles map to the stage loops they run::

    collect    collectors.loop.run      devices → samples topic
    ingest     pipeline.ingest.loop.run        samples/alerts/actions topics → store
    detect     detectors.loop.run       samples topic → alerts topic (or, partitioned, symptoms)
    correlate  detectors.partition.service.run_correlate  symptoms topic → alerts topic
    remediate  remediation.loop.run     alerts topic → receivers, drains → actions topic
    api        ui.api.server.run              store → REST API

Each loop runs in its own thread under a :class:`~pipeline.supervisor.Supervisor`: a loop that
raises is logged and restarted under the retry policy; one that keeps crashing without progress
is reported by the :class:`~rocewatch.watchdog.Watchdog` (its health, a metric, an alert). The
platform stops when the shared stop event is set (signal, scenario end, test).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pipeline.bus.base import Bus, Topics
from pipeline.bus.memory import MemoryBus
from pipeline.errors import ConfigError
from pipeline.exposition import MeteredBus, Metrics, MetricsServer
from pipeline.stage import StageContext, StageLoop
from pipeline.store.base import Store, open_store
from pipeline.supervisor import Supervisor
from pipeline.topology.model import Topology
from rocewatch.settings import Settings, check
from rocewatch.watchdog import Watchdog

log = logging.getLogger("rocewatch")

# Each role's loop is imported when the role starts (``rocewatch --help`` stays fast). The imports
# are typed: mypy proves that the one settings model gives every loop the sections it reads.


def _collect() -> StageLoop[Settings]:
    from collectors.loop import run
    return run


def _ingest() -> StageLoop[Settings]:
    from pipeline.ingest.loop import run
    return run


def _detect() -> StageLoop[Settings]:
    from detectors.loop import run
    return run


def _correlate() -> StageLoop[Settings]:
    from detectors.partition.service import run_correlate
    return run_correlate


def _remediate() -> StageLoop[Settings]:
    from remediation.loop import run
    return run


def _api() -> StageLoop[Settings]:
    from ui.api.server import run
    return run


#: role → its loop's loader
ROLES: dict[str, Callable[[], StageLoop[Settings]]] = {
    "collect": _collect,
    "ingest": _ingest,
    "detect": _detect,
    "remediate": _remediate,
    "api": _api,
}
#: the roles that exist only in some deployments: the fabric-wide correlator of partitioned
#: detection (``detection.mode: partitioned``)
PARTITIONED_ROLES: dict[str, Callable[[], StageLoop[Settings]]] = {"correlate": _correlate}
#: every role a process can run
KNOWN_ROLES = {**ROLES, **PARTITIONED_ROLES}
#: what one process runs when no role is named (``correlate`` joins them when detection is
#: partitioned: :func:`default_roles`)
ALL_ROLES: tuple[str, ...] = tuple(ROLES)


def default_roles(settings: Settings, roles: tuple[str, ...]) -> tuple[str, ...]:
    """Every role of one process includes the correlator when detection is partitioned."""
    if roles == ALL_ROLES and settings.detection.mode == "partitioned":
        return (*roles, "correlate")
    return roles


def parse_roles(values: Sequence[str]) -> tuple[str, ...]:
    """Roles as given on a command line, ``--role`` repeated or comma-separated or both
    (``collect,ingest``), in order, each once; an unknown one is a ConfigError."""
    roles: list[str] = []
    for value in values:
        for role in (r.strip() for r in value.split(",")):
            if role and role not in roles:
                roles.append(role)
    unknown = [r for r in roles if r not in KNOWN_ROLES]
    if unknown:
        raise ConfigError(f"unknown role(s) {', '.join(unknown)}; roles: "
                          f"{', '.join(KNOWN_ROLES)}")
    return tuple(roles)


def load_loop(role: str) -> StageLoop[Settings]:
    return KNOWN_ROLES[role]()


def open_bus(settings: Settings) -> Bus:
    if settings.bus.kind == "memory":
        return MemoryBus(partitions=settings.bus.partitions, capacity=settings.bus.capacity)
    from pipeline.bus.kafka import KafkaBus

    bus: Bus = KafkaBus(settings.bus)
    return bus


@dataclass
class Platform:
    """The roles of one process, started and supervised together."""

    settings: Settings
    roles: tuple[str, ...] = ALL_ROLES
    topology: Topology | None = None
    bus: Bus | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    context: StageContext[Settings] | None = None
    #: the process's metrics (every loop's, its supervision, every consumer's lag)
    metrics: Metrics = field(default_factory=Metrics)
    #: ``/metrics`` on ``metrics.listen``, when set
    metrics_server: MetricsServer | None = None
    _running: dict[str, Supervisor] = field(default_factory=dict)
    watchdog: Watchdog | None = None
    _watching: threading.Thread | None = None

    def start(self) -> StageContext[Settings]:
        self.roles = default_roles(self.settings, parse_roles(self.roles))
        check(self.settings, self.roles)
        topology = self.topology
        if topology is None and self.settings.topology:
            topology = Topology.load(self.settings.topology)
        bus = MeteredBus(self.bus or open_bus(self.settings), self.metrics)
        topics = Topics(self.settings.bus.topic_prefix)
        bus.ensure_topics(topics.all())
        store: Store | None = None
        if "ingest" in self.roles or "api" in self.roles:
            store = open_store(self.settings.store)
        self.context = StageContext(self.settings, bus, topics, topology, store,
                                    metrics=self.metrics)
        self.metrics.collect("loops", self._loop_families)
        if self.settings.metrics.listen:
            self.metrics_server = MetricsServer(self.metrics, self.settings.metrics.listen)
            self.metrics_server.start()
        # consumers first, so nothing the collectors send predates its readers
        order = [r for r in ("ingest", "correlate", "detect", "remediate", "api", "collect")
                 if r in self.roles]
        for role in order:
            self._spawn(role, load_loop(role))
        self.watchdog = Watchdog(self._running, bus.producer(), topics, self.settings.site)
        self._watching = threading.Thread(target=self.watchdog.run, args=(self.stop_event,),
                                          name="rocewatch-watchdog", daemon=True)
        self._watching.start()
        return self.context

    def _spawn(self, role: str, loop: StageLoop[Settings]) -> None:
        assert self.context is not None
        ctx = self.context
        sup = Supervisor(f"{role} loop", lambda stop: loop(ctx, stop), self.stop_event,
                         logger=log, thread_name=f"rocewatch-{role}")
        self._running[role] = sup
        # the loop's supervision in every health report (``/healthz`` included): a loop that is
        # down or crash-looping degrades the platform
        ctx.health[sup.name] = sup.health
        sup.start()

    def _loop_families(self) -> Iterator[Metric]:
        """Every role loop's supervision, for Prometheus."""
        looks = {role: sup.health() for role, sup in self._running.items()}
        for name, doc, kind, read in LOOP_METRICS:
            family = kind(f"rocewatch_loop_{name}", doc, labels=["loop"])
            for role, health in looks.items():
                family.add_metric([role], float(read(health)))
            yield family

    def health(self) -> dict[str, Any]:
        """Each role's supervision and what its loop reports, and the other probes."""
        out: dict[str, Any] = {role: sup.health() for role, sup in self._running.items()}
        supervision = {sup.name for sup in self._running.values()}
        if self.context:
            for name, probe in list(self.context.health.items()):
                if name not in supervision:
                    out.setdefault(name, {}).update(probe())
        return out

    def stop(self, timeout: float = 15.0) -> None:
        self.stop_event.set()
        deadline = time.monotonic() + timeout
        for role, sup in self._running.items():
            if not sup.join(max(0.1, deadline - time.monotonic())):
                log.warning("%s loop did not stop within %.0fs", role, timeout)
        if self._watching is not None:
            self._watching.join(max(0.1, deadline - time.monotonic()))
        if self.watchdog is not None:
            self.watchdog.close()
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if self.context:
            if self.context.store is not None:
                self.context.store.close()
            self.context.bus.close()


#: the supervision of every role loop as metrics: name, help, family, reading of its health
LOOP_METRICS: tuple[tuple[str, str, Any, Callable[[dict[str, Any]], float]], ...] = (
    ("up", "1 while the loop's thread runs", GaugeMetricFamily, lambda h: h["alive"]),
    ("restarts", "crashes of the loop, each followed by a restart", CounterMetricFamily,
     lambda h: h["restarts"]),
    ("crashes_without_progress", "crashes in a row that came without progress",
     GaugeMetricFamily, lambda h: h["crashes_without_progress"]),
    ("crash_looping", "1 while the loop keeps crashing without progress (an alert is raised)",
     GaugeMetricFamily, lambda h: h["crash_looping"]),
)


def run_roles(settings: Settings, roles: Sequence[str], topology: Topology | None = None) -> None:
    """Run roles until SIGINT/SIGTERM."""
    import signal

    platform = Platform(settings, tuple(roles), topology)
    signal.signal(signal.SIGTERM, lambda *_: platform.stop_event.set())
    platform.start()
    try:
        while not platform.stop_event.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        platform.stop()
