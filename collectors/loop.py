"""The ``collect`` role's loop: every configured collector instance, supervised, into the bus.

Each entry of ``collectors:`` in the config is a :class:`~pipeline.config.PluginSpec` built through
the ``rocewatch.collectors`` registry. Every instance runs in a thread of its own; what it emits
goes to the samples topic keyed by device (so one device's samples stay in order), and its LLDP
neighbour reports to the neighbors topic, keyed the same way. An instance
that crashes is rebuilt and restarted by :class:`~pipeline.supervisor.Supervisor`, alone: the
others keep collecting. Instances that name a ``metrics_listen`` address share one Prometheus
endpoint per address. With ``coordination`` configured, an instance without a static ``shard``
shares its targets with the same instance of the other collect processes
(:mod:`collectors.assignment`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from collectors.assignment import Assigned, assigned
from collectors.base import Collector
from collectors.exposition import HealthEndpoint, watch
from pipeline.bus.base import Producer, Topics
from pipeline.config import CoordinationSettings, PluginSpec
from pipeline.model import SampleBatch
from pipeline.registry import Registry
from pipeline.retry import RetryPolicy
from pipeline.stage import CoreSettings, StageContext
from pipeline.supervisor import RESTART, Supervisor
from pipeline.topology.neighbors import NeighborReport
from pipeline.wire.neighbors import encode_reports, report_key
from pipeline.wire.publish import publish_batches

log = logging.getLogger("rocewatch.collectors")


class WithCollectors(CoreSettings, Protocol):
    """The settings the collect role reads: the core's sections and ``collectors``."""

    @property
    def collectors(self) -> tuple[PluginSpec, ...]: ...


class Publisher:
    """The emit callback all collectors share: one producer, one batch at a time."""

    def __init__(self, producer: Producer, topics: Topics) -> None:
        self.producer = producer
        self.topics = topics
        self.batches = 0
        self.samples = 0
        self.neighbor_reports = 0
        self._lock = threading.Lock()

    def __call__(self, batch: SampleBatch) -> None:
        if not len(batch):
            return
        with self._lock:
            publish_batches(self.producer, self.topics, [batch])
            self.batches += 1
            self.samples += len(batch)

    def neighbors(self, report: NeighborReport) -> None:
        """A device's LLDP report to the neighbors topic, keyed by the device."""
        with self._lock:
            self.producer.send(self.topics.neighbors, encode_reports([report]),
                               key=report_key(report))
            self.neighbor_reports += 1


class Supervised:
    """One collector instance under a :class:`~pipeline.supervisor.Supervisor`; every restart
    runs a new instance built from its spec (nothing is kept from the one that crashed, and a
    spec that cannot be built now is a crash like any other, retried under the same policy)."""

    def __init__(self, spec: PluginSpec, where: str, registry: Registry[Collector],
                 emit: Publisher, policy: RetryPolicy = RESTART,
                 coordination: CoordinationSettings | None = None, site: str = "") -> None:
        self.spec = spec
        self.where = where
        self.registry = registry
        self.emit = emit
        self.policy = policy
        self.coordination = coordination
        self.site = site
        self.collector: Collector = self._build()
        self._built_for_run = True
        self.supervisor: Supervisor | None = None

    def start(self, stop: threading.Event) -> None:
        self.supervisor = Supervisor(f"collector {self.spec.instance}", self._run, stop,
                                     policy=self.policy, logger=log,
                                     thread_name=f"collector-{self.spec.instance}")
        self.supervisor.start()

    def _run(self, stop: threading.Event) -> None:
        if not self._built_for_run:
            self.collector = self._build()
        self._built_for_run = False
        self.collector.run(stop)

    def _build(self) -> Collector:
        """The instance, or with coordination its shard of the targets shared with the other
        collect processes (:mod:`collectors.assignment`)."""
        if self.coordination is not None and assigned(self.spec, self.coordination):
            return Assigned(self.spec, self.where, self.registry, self.coordination, self.site,
                            emit=self.emit, emit_neighbors=self.emit.neighbors)
        collector = self.registry.build(self.spec, self.where, emit=self.emit)
        collector.emit_neighbors = self.emit.neighbors
        return collector

    def join(self, timeout: float) -> bool:
        """True once the instance has stopped (or never started)."""
        return self.supervisor is None or self.supervisor.join(timeout)

    def health(self) -> dict[str, Any]:
        supervision = (self.supervisor.health() if self.supervisor is not None else
                       {"alive": False, "restarts": 0, "last_error": "",
                        "crashes_without_progress": 0})
        return {**self.collector.health(), **supervision}


def run(ctx: StageContext[WithCollectors], stop: threading.Event) -> None:
    """Run every collector of ``ctx.settings.collectors`` until ``stop`` is set."""
    specs = ctx.settings.collectors
    if not specs:
        log.warning("the collect role has no collectors configured")
    registry: Registry[Collector] = Registry("rocewatch.collectors")
    producer = ctx.bus.producer()
    publisher = Publisher(producer, ctx.topics)
    running = [Supervised(spec, f"collectors[{i}]", registry, publisher,
                          coordination=ctx.settings.coordination, site=ctx.settings.site)
               for i, spec in enumerate(specs)]
    endpoints: list[HealthEndpoint] = []
    # the instances stop on their own event: leaving this loop early (an endpoint that cannot
    # bind) must stop them without setting the platform's shared stop event
    halt = threading.Event()
    try:
        by_listen: dict[str, list[Supervised]] = {}
        for sup in running:
            listen = getattr(sup.collector.options, "metrics_listen", "")
            if listen:
                by_listen.setdefault(listen, []).append(sup)
        for listen, group in by_listen.items():
            endpoints.append(HealthEndpoint(listen, [s.health for s in group]).start())
        for sup in running:
            ctx.health[f"collector.{sup.spec.instance}"] = sup.health
            sup.start(halt)
        ctx.health["collect"] = lambda: {"batches": publisher.batches,
                                         "samples": publisher.samples,
                                         "neighbor_reports": publisher.neighbor_reports}
        watch(ctx.metrics, [s.health for s in running], ctx.health["collect"])
        stop.wait()
    finally:
        halt.set()
        for sup in running:
            if not sup.join(15.0):
                log.warning("collector %s did not stop", sup.spec.instance)
        for endpoint in endpoints:
            endpoint.stop()
        producer.flush(10.0)
        producer.close()
