"""The detect role's loop: samples topic → detection chain → alerts topic.

It reads the samples topic in its own consumer group, decodes each message (what cannot be read,
a whole message or some of its rows, goes to the dead-letter topic under the wire's one policy,
:mod:`pipeline.wire.deadletter`, and never stops the loop), gathers what its polls return until a
step is due (:mod:`detectors.gather`: a quarter of the devices, or of the sample interval in event
time, or a poll that came back empty), feeds them through :class:`~detectors.chain.DetectionChain`
(one step per wave of event time: the chain gives the same state however the samples are
batched), publishes the alert state changes to the alerts topic (:mod:`pipeline.wire.alerts`),
and only then, its dead letters flushed, commits what it gathered (a member that stops before
that leaves it to the next owner of its partitions). The
topology comes from the stage context; event time comes from the samples. Maintenance (what
remediation holds drained or isolated, :mod:`pipeline.maintenance`) comes from the actions topic
(group ``<group>-maintenance``): an input like the topology, read before each step's samples.
The devices' LLDP reports come from the neighbors topic (group ``<group>-topology``) into the
topology watch (:mod:`detectors.topology`), whose incidents are published like the chain's.

With ``detection.mode: partitioned`` the role is a worker of partitioned detection instead
(:mod:`detectors.partition.service`): the same engine, publishing symptoms for the correlator.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from detectors.chain import DetectionChain
from detectors.gather import Gathered
from detectors.metrics import watch
from detectors.settings import DetectionSettings
from detectors.topology import TopologyWatch
from pipeline import heap
from pipeline.bus.base import Consumer, Message, Producer, Topics
from pipeline.errors import DecodeError
from pipeline.maintenance import MaintenanceBook
from pipeline.model import Alert, SampleBatch
from pipeline.stage import CoreSettings, StageContext
from pipeline.wire.actions import decode_actions
from pipeline.wire.alerts import encode_alerts
from pipeline.wire.deadletter import DeadLetter, DeadLetters
from pipeline.wire.neighbors import decode_reports
from pipeline.wire.samples import decode_samples

log = logging.getLogger("rocewatch.detect")


class WithDetection(CoreSettings, Protocol):
    """The settings the detect role reads: the core's sections and ``detection``."""

    @property
    def detection(self) -> DetectionSettings: ...


@dataclass
class EngineStats:
    messages: int = 0
    undecodable: int = 0
    published: int = 0
    last_step_s: float = 0.0
    maintenance_records: int = 0
    #: polls, and steps of the chain (each over what one or more polls gathered)
    polls: int = 0
    steps: int = 0


class Engine:
    """One detect consumer and its chain."""

    #: the key of the chain's alert messages (the topology watch's are always ``detect``)
    alerts_key = b"detect"
    #: whether polls are gathered into one step (:mod:`detectors.gather`): an engine of
    #: samples does; one that reads something else steps on every poll
    gathers = True

    def __init__(self, consumer: Consumer, producer: Producer, topics: Topics,
                 chain: DetectionChain, max_records: int = 2000, group: str = "detect",
                 maintenance: Consumer | None = None, neighbors: Consumer | None = None) -> None:
        self.consumer = consumer
        #: the neighbors topic, for the topology watch (detectors.topology)
        self.neighbors = neighbors
        self.topology = TopologyWatch(chain.topology, update_every_s=chain.settings.update_every_s)
        #: the actions topic, for remediation's maintenance records (pipeline.maintenance)
        self.maintenance = maintenance
        self.producer = producer
        self.topics = topics
        self.chain = chain
        self.max_records = max_records
        self.stats = EngineStats()
        self.letters = DeadLetters(group, producer, topics.deadletter)
        #: what the polls returned and the chain has not stepped yet (detectors.gather)
        self.gathered = Gathered()

    def decode(self, msg: Message) -> SampleBatch | None:
        """The good rows of a message (None when it had none); the rest is dead-lettered."""
        decoded = self.letters.read_items(msg, decode_samples)
        if isinstance(decoded, DeadLetter):
            self.stats.undecodable += 1
            return None
        return decoded.items if len(decoded.items) else None

    def step(self, timeout_s: float = 0.5) -> int:
        """One poll; once a step is due (:mod:`detectors.gather`), what was gathered → detect →
        publish → commit. Returns the messages polled (0: the poll came back empty, and
        anything gathered was stepped)."""
        self.learn_maintenance()
        self.watch_topology()
        msgs = self.consumer.poll(timeout_s=timeout_s, max_records=self.max_records)
        self.stats.polls += 1
        t0 = time.perf_counter()
        if not self.gathers:
            if msgs:
                self._finish(self.handle(msgs), len(msgs), t0)
            return len(msgs)
        if msgs:
            self.gathered.add([b for b in (self.decode(m) for m in msgs) if b is not None],
                              len(msgs))
        chain = self.chain
        if self.gathered.messages and (not msgs or self.gathered.due(
                chain.settings.gather_intervals, chain.interval_ns, len(chain.names.devices))):
            gathered, self.gathered = self.gathered, Gathered()
            self._finish(self.judge(gathered.batches), gathered.messages, t0)
        return len(msgs)

    def _finish(self, changes: list[Alert], messages: int, t0: float) -> None:
        self.publish(changes)
        self.letters.flush()
        self.consumer.commit()
        self.stats.messages += messages
        self.stats.steps += 1
        self.stats.last_step_s = time.perf_counter() - t0

    def handle(self, msgs: list[Message]) -> list[Alert]:
        """Messages through the chain at once: the alert changes to publish."""
        return self.judge([b for b in (self.decode(m) for m in msgs) if b is not None])

    def judge(self, batches: list[SampleBatch]) -> list[Alert]:
        """Decoded samples through the chain: the alert changes to publish."""
        return self.chain.observe(batches) if batches else []

    @property
    def maintenance_book(self) -> MaintenanceBook:
        """Where the maintenance records go: the book of the chain that correlates."""
        return self.chain.maintenance

    def learn_maintenance(self) -> None:
        """Maintenance records reach the chain before the samples that show what it causes
        (remediation publishes them before it touches the fabric). Unreadable action messages
        are ingest's to park; they are only counted here."""
        if self.maintenance is None:
            return
        msgs = self.maintenance.poll(timeout_s=0.0, max_records=1000)
        for msg in msgs:
            try:
                results = decode_actions(msg.value).items
            except DecodeError:
                self.maintenance_book.bad += 1
                continue
            self.stats.maintenance_records += self.maintenance_book.apply_results(results)
        if msgs:
            self.maintenance.commit()

    def watch_topology(self) -> None:
        """The devices' latest LLDP reports into the topology watch, with the samples' event
        time (a streamed table's change is confirmed by time passing, whether or not reports
        come: :mod:`detectors.topology`); its incidents published before the reports are
        committed. Unreadable reports are ingest's to park; they are only counted here."""
        if self.neighbors is None:
            return
        msgs = self.neighbors.poll(timeout_s=0.0, max_records=2000)
        reports = []
        for msg in msgs:
            try:
                reports.extend(decode_reports(msg.value).items)
            except DecodeError:
                self.stats.undecodable += 1
        if reports or self.topology.latest:
            self.publish(self.topology.observe(reports, *self.event_time()), key=b"detect")
        if msgs:
            self.neighbors.commit()

    def event_time(self) -> tuple[int, int]:
        """The samples' event time and sample interval, in ns (0: not known yet)."""
        return self.chain.now_ns, self.chain.interval_ns

    def publish(self, changes: list[Alert], key: bytes | None = None) -> None:
        if not changes:
            return
        self.producer.send(self.topics.alerts, encode_alerts(changes), key=key or self.alerts_key)
        self.producer.flush()
        self.stats.published += len(changes)

    def health(self) -> dict[str, Any]:
        return {**asdict(self.stats), **self.chain.health(),
                "dead_letters": asdict(self.letters.stats), "topology": self.topology.health()}

    def close(self) -> None:
        self.consumer.close()
        if self.maintenance is not None:
            self.maintenance.close()
        if self.neighbors is not None:
            self.neighbors.close()
        self.producer.close()


def run(ctx: StageContext[WithDetection], stop: threading.Event) -> None:
    """The detect role's loop (a partitioned deployment's worker: detectors.partition)."""
    settings = ctx.settings.detection
    if settings.mode == "partitioned":
        from detectors.partition.service import run_worker

        run_worker(ctx, stop)
        return
    ctx.bus.ensure_topics(ctx.topics.all())
    chain = DetectionChain(settings, ctx.topology)
    engine = Engine(ctx.bus.consumer([ctx.topics.samples], settings.group), ctx.bus.producer(),
                    ctx.topics, chain, group=settings.group,
                    maintenance=ctx.bus.consumer([ctx.topics.actions],
                                                 f"{settings.group}-maintenance"),
                    neighbors=ctx.bus.consumer([ctx.topics.neighbors],
                                               f"{settings.group}-topology"))
    serve(ctx, engine, stop)


def serve(ctx: StageContext[WithDetection], engine: Engine, stop: threading.Event) -> None:
    """Step a detect engine until ``stop``, its health and metrics published."""
    heap.settle()  # the engine's chain, topology and consumers live as long as the process
    ctx.health["detect"] = engine.health
    step_seconds = watch(ctx.metrics, engine.health)
    try:
        while not stop.is_set():
            steps = engine.stats.steps
            engine.step()
            if engine.stats.steps != steps:
                step_seconds.observe(engine.stats.last_step_s)
    finally:
        engine.close()
