"""The roles of partitioned detection: the detect worker's loop and the ``correlate`` role.

* **detect** (``detection.mode: partitioned``): samples topic (the ``detection.group`` consumer
  group, shared by every worker: each judges the devices of its partitions) →
  :class:`~detectors.partition.worker.SymptomChain` → one report per step on the symptoms topic
  (:mod:`pipeline.wire.symptoms`, keyed by the worker), flushed before the samples are committed.
* **correlate**: runs only in the holder of the ``correlator`` lease
  (:mod:`pipeline.cluster.lease`; without ZooKeeper, in the one process that runs it); the
  others stand by, reading nothing. The holder reads the symptoms topic (group
  ``<group>-correlate``), the actions topic for maintenance and the neighbors topic for the
  topology watch, correlates (:class:`~detectors.partition.correlate.PartitionedCorrelator`),
  publishes the alert changes (keyed ``correlate``), and commits the reports only after those
  are flushed. Every correlate process, standby or not, follows the alerts topic into a
  :class:`BookMirror`: what the correlator published as firing and did not resolve. A standby
  that takes the lease drains its mirror and starts its alert book from it, then reads the
  symptoms from the last commit: it replays the reports of the steps whose alerts may not have
  been sent, republishes under the same fingerprints only what changed, and resolves what the
  dead correlator left firing that is no longer active.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from detectors.loop import Engine, WithDetection, serve
from detectors.partition.correlate import PartitionedCorrelator
from detectors.partition.worker import SymptomChain
from pipeline import heap
from pipeline.bus.base import Consumer, Message, Producer, Topics
from pipeline.cluster.lease import Lease, identity
from pipeline.errors import DecodeError
from pipeline.maintenance import MaintenanceBook
from pipeline.model import Alert, SampleBatch
from pipeline.stage import StageContext
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.deadletter import DeadLetter
from pipeline.wire.symptoms import SymptomReport, decode_report, encode_report, report_key

log = logging.getLogger("rocewatch.correlate")
#: the lease the correlator runs under
LEASE = "correlator"
#: the key of the correlator's messages on the alerts topic
KEY = b"correlate"


class WorkerEngine(Engine):
    """A detect worker: its chain's reports go to the symptoms topic, not alerts."""

    chain: SymptomChain

    def judge(self, batches: list[SampleBatch]) -> list[Alert]:
        super().judge(batches)
        reports = self.chain.take_reports()
        for report in reports:
            self.producer.send(self.topics.symptoms, encode_report(report),
                               key=report_key(report))
        if reports:
            self.producer.flush()
        return []


class CorrelateEngine(Engine):
    """The correlator's consumer of the symptoms topic and its state."""

    alerts_key = KEY
    gathers = False  # it reads symptom reports, stepped one event time at a time

    def __init__(self, consumer: Consumer, producer: Producer, topics: Topics,
                 correlator: PartitionedCorrelator, group: str,
                 maintenance: Consumer | None = None, neighbors: Consumer | None = None) -> None:
        super().__init__(consumer, producer, topics, correlator.rules, group=group,
                         maintenance=maintenance, neighbors=neighbors)
        self.correlator = correlator

    @property
    def maintenance_book(self) -> MaintenanceBook:
        return self.correlator.fabric.maintenance

    def read(self, msg: Message) -> SymptomReport | None:
        decoded = self.letters.read_items(msg, decode_report)
        if isinstance(decoded, DeadLetter):
            self.stats.undecodable += 1
            return None
        return decoded.items

    def handle(self, msgs: list[Message]) -> list[Alert]:
        """A poll's reports, one step per event time in order: a correlator that reads many
        intervals at once (behind, or replaying after a take-over) judges each of them, as one
        process does."""
        reports = sorted((r for r in (self.read(m) for m in msgs) if r is not None),
                         key=lambda r: r.now_ns)
        changes: list[Alert] = []
        for _, at_once in groupby(reports, key=lambda r: r.now_ns):
            self.correlator.take(at_once)
            changes.extend(self.correlator.step())
        return changes

    def event_time(self) -> tuple[int, int]:
        return self.correlator.now_ns, self.correlator.interval()

    def health(self) -> dict[str, Any]:
        return {**super().health(), **self.correlator.health()}


def run_worker(ctx: StageContext[WithDetection], stop: threading.Event) -> None:
    """The detect role in a partitioned deployment."""
    settings = ctx.settings.detection
    ctx.bus.ensure_topics(ctx.topics.all())
    chain = SymptomChain(settings, ctx.topology, identity())
    engine = WorkerEngine(ctx.bus.consumer([ctx.topics.samples], settings.group),
                          ctx.bus.producer(), ctx.topics, chain, group=settings.group)
    serve(ctx, engine, stop)


class BookMirror:
    """What the correlator (whichever process) published as firing and has not resolved, read
    from the alerts topic by every correlate process (a consumer group of its own, from the
    topic's start). The correlator republishes every firing incident at least every
    ``update_every_s`` of event time and every firing symptom every ``symptom_update_every_s``,
    so the mirror's evidence is never older than that."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.firing: dict[str, Alert] = {}
        self.unreadable = 0

    def read(self, timeout_s: float) -> int:
        """Fold one poll in; returns the messages read."""
        msgs = self.consumer.poll(timeout_s=timeout_s, max_records=5000)
        for msg in msgs:
            if msg.key != KEY:
                continue
            try:
                alerts = decode_alerts(msg.value).items
            except DecodeError:  # ingest parks it; the mirror only counts it
                self.unreadable += 1
                continue
            for a in alerts:
                if a.ends_ns is None:
                    self.firing[a.fingerprint] = a
                else:
                    self.firing.pop(a.fingerprint, None)
        return len(msgs)

    def drain(self, quiet_s: float = 0.2) -> None:
        """Read until the topic has been quiet for ``quiet_s`` (the dead correlator's last
        flushed alerts included)."""
        while self.read(quiet_s):
            pass

    def close(self) -> None:
        self.consumer.close()


class Correlation:
    """The correlate role's work, switched on and off by the lease: a fresh engine (and state,
    from the last commit on) each time this process takes it."""

    def __init__(self, ctx: StageContext[WithDetection]) -> None:
        self.ctx = ctx
        self.wanted = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.engine: CorrelateEngine | None = None
        group = f"{ctx.settings.detection.group}-correlate"
        # a group of its own: every correlate process reads the whole topic
        self.mirror = BookMirror(ctx.bus.consumer(
            [ctx.topics.alerts], f"{group}-book-{identity()}-{uuid.uuid4().hex[:8]}"))

    def start(self) -> None:
        self.idle.clear()
        self.wanted.set()

    def stop(self) -> None:
        """Stop correlating; returns once the engine is closed (nothing more is published)."""
        self.wanted.clear()
        self.idle.wait(30)

    def _open(self) -> CorrelateEngine:
        ctx, settings = self.ctx, self.ctx.settings.detection
        group = f"{settings.group}-correlate"
        self.mirror.drain()
        correlator = PartitionedCorrelator(settings, ctx.topology)
        correlator.fabric.book.resume(self.mirror.firing.values())
        log.info("correlating from the symptoms topic's last commit, %d alerts firing",
                 len(self.mirror.firing))
        return CorrelateEngine(
            ctx.bus.consumer([ctx.topics.symptoms], group), ctx.bus.producer(), ctx.topics,
            correlator, group,
            maintenance=ctx.bus.consumer([ctx.topics.actions], f"{group}-maintenance"),
            neighbors=ctx.bus.consumer([ctx.topics.neighbors], f"{group}-topology"))

    def turn(self, stop: threading.Event, idle_s: float = 0.5) -> None:
        """One step of the role's loop: correlate while wanted, close when not, and follow the
        alerts topic; waits at most ``idle_s`` for news."""
        if self.wanted.is_set() and not stop.is_set():
            if self.engine is None:
                self.engine = self._open()
            self.engine.step(timeout_s=idle_s)
            self.mirror.read(0.0)
            return
        self.close()
        self.mirror.read(idle_s)

    def close(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            engine.close()
        self.idle.set()

    def health(self) -> dict[str, Any]:
        engine = self.engine
        return {"correlating": engine is not None, "mirrored_firing": len(self.mirror.firing),
                **(engine.health() if engine else {})}


def families(h: dict[str, Any]) -> Iterator[Metric]:
    """The correlate role's scrape-time families, read from its health."""
    c = h.get("correlator", {})
    for name, doc, value in (
            ("correlating", "1 while this process correlates (it holds the lease)",
             h.get("correlating", False)),
            ("workers", "detect workers whose symptoms count", c.get("workers", 0)),
            ("devices", "devices with an owner among them", c.get("devices", 0)),
            ("mirrored_firing", "alerts the correlator published as firing, not resolved",
             h.get("mirrored_firing", 0)),
            ("event_time_seconds", "the event time correlation has reached (Unix seconds)",
             (h.get("now_ns") or 0) / 1e9)):
        yield GaugeMetricFamily(f"rocewatch_correlate_{name}", doc, value=float(value))
    for name, doc, value in (
            ("reports", "symptom reports taken", c.get("reports", 0)),
            ("steps", "correlation steps", c.get("steps", 0)),
            ("moved_devices", "devices that changed owner", c.get("moved", 0))):
        yield CounterMetricFamily(f"rocewatch_correlate_{name}", doc, value=float(value))


def run_correlate(ctx: StageContext[WithDetection], stop: threading.Event) -> None:
    """The correlate role: under the ``correlator`` lease when ZooKeeper is configured."""
    if ctx.settings.detection.mode != "partitioned":
        log.info("detection.mode is single: the detect role correlates; nothing to do here")
        stop.wait()
        return
    ctx.bus.ensure_topics(ctx.topics.all())
    work = Correlation(ctx)
    ctx.health["correlate"] = work.health
    ctx.metrics.collect("correlate", lambda: families(work.health()))
    lease = None
    if ctx.settings.coordination.zookeeper:
        lease = Lease(ctx.settings.coordination, ctx.settings.site, LEASE, work.start,
                      work.stop, ctx.metrics).begin()
        ctx.health["lease"] = lease.health
    else:
        work.start()
    heap.settle()  # what the correlation keeps lives as long as the process
    try:
        while not stop.is_set():
            work.turn(stop)
    finally:
        work.wanted.clear()
        work.close()  # before the lease's stop, which waits for it
        if lease is not None:
            lease.close()
        work.mirror.close()
