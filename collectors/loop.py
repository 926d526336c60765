"""The ``collect`` role's loop: every configured collector instance, supervised, into the bus.

Each entry of ``collectors:`` in the config is a :class:`~pipeline.config.PluginSpec` built through
the ``rocewatch.collectors`` registry. Every instance runs in a thread of its own; what it emits
goes to the samples topic keyed by device (so one device's samples stay in order). An instance
that crashes is rebuilt and restarted with backoff, alone: the others keep collecting. Instances
that name a ``metrics_listen`` address share one Prometheus endpoint per address.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from collectors.base import Collector
from collectors.exposition import HealthEndpoint
from pipeline.bus.base import Producer, Topics
from pipeline.config import PluginSpec
from pipeline.errors import RocewatchError
from pipeline.ingest.loop import publish_batches
from pipeline.model import SampleBatch
from pipeline.registry import Registry
from pipeline.stage import StageContext

log = logging.getLogger("rocewatch.collectors")


class Publisher:
    """The emit callback all collectors share: one producer, one batch at a time."""

    def __init__(self, producer: Producer, topics: Topics) -> None:
        self.producer = producer
        self.topics = topics
        self.batches = 0
        self.samples = 0
        self._lock = threading.Lock()

    def __call__(self, batch: SampleBatch) -> None:
        if not len(batch):
            return
        with self._lock:
            publish_batches(self.producer, self.topics, [batch])
            self.batches += 1
            self.samples += len(batch)


class Supervised:
    """One collector instance in its thread; rebuilt from its spec after a crash."""

    def __init__(self, spec: PluginSpec, where: str, registry: Registry[Collector],
                 emit: Publisher) -> None:
        self.spec = spec
        self.where = where
        self.registry = registry
        self.emit = emit
        self.collector: Collector = registry.build(spec, where, emit=emit)
        self.restarts = 0
        self.last_error = ""
        self.thread = threading.Thread(target=self._supervise, daemon=True,
                                       name=f"collector-{spec.instance}")

    def start(self, stop: threading.Event) -> None:
        self._stop = stop
        self.thread.start()

    def _supervise(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.collector.run(self._stop)
                return
            except Exception as exc:  # the supervisor boundary: log, back off, rebuild
                self.restarts += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, RocewatchError):
                    log.error("collector %s failed: %s", self.spec.instance, exc)
                else:
                    log.exception("collector %s crashed", self.spec.instance)
            if time.monotonic() - started > 60:
                backoff = 1.0
            if self._stop.wait(backoff):
                return
            backoff = min(backoff * 2, 30.0)
            try:
                self.collector = self.registry.build(self.spec, self.where, emit=self.emit)
            except RocewatchError as exc:
                self.last_error = str(exc)
                log.error("collector %s cannot be rebuilt: %s", self.spec.instance, exc)

    def health(self) -> dict[str, Any]:
        return {**self.collector.health(), "alive": self.thread.is_alive(),
                "restarts": self.restarts, "last_error": self.last_error}


def run(ctx: StageContext, stop: threading.Event) -> None:
    """Run every collector of ``ctx.settings.collectors`` until ``stop`` is set."""
    specs: tuple[PluginSpec, ...] = tuple(getattr(ctx.settings, "collectors", ()) or ())
    if not specs:
        log.warning("the collect role has no collectors configured")
    registry: Registry[Collector] = Registry("rocewatch.collectors")
    producer = ctx.bus.producer()
    publisher = Publisher(producer, ctx.topics)
    running = [Supervised(spec, f"collectors[{i}]", registry, publisher)
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
                                         "samples": publisher.samples}
        stop.wait()
    finally:
        halt.set()
        for sup in running:
            if sup.thread.ident is not None:
                sup.thread.join(15.0)
                if sup.thread.is_alive():
                    log.warning("collector %s did not stop", sup.spec.instance)
        for endpoint in endpoints:
            endpoint.stop()
        producer.flush(10.0)
        producer.close()
