"""The detect role's loop: samples topic → detection chain → alerts topic.

It reads the samples topic in its own consumer group, decodes each message (a message that cannot
be decoded is counted and skipped: it never stops the loop), feeds what one poll returned through
:class:`~detectors.chain.DetectionChain` as one step, publishes the alert state changes to the
alerts topic as JSON (``pipeline.model.alerts_to_json``), and only then commits. The topology comes
from the stage context; event time comes from the samples.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from pipeline.bus.base import Consumer, Producer, Topics
from pipeline.errors import DecodeError
from pipeline.model import Alert, SampleBatch, alerts_to_json
from pipeline.stage import StageContext
from pipeline.wire.samples import decode_batch

log = logging.getLogger("rocewatch.detect")


@dataclass
class EngineStats:
    messages: int = 0
    undecodable: int = 0
    published: int = 0
    last_step_s: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


class Engine:
    """One detect consumer and its chain."""

    def __init__(self, consumer: Consumer, producer: Producer, topics: Topics,
                 chain: DetectionChain, max_records: int = 2000) -> None:
        self.consumer = consumer
        self.producer = producer
        self.topics = topics
        self.chain = chain
        self.max_records = max_records
        self.stats = EngineStats()

    def decode(self, value: bytes) -> SampleBatch | None:
        try:
            return decode_batch(value)
        except DecodeError as exc:
            self.stats.undecodable += 1
            kind = str(exc).split(":")[0][:80]
            if kind not in self.stats.reasons:
                log.warning("skipping an undecodable samples message: %s", exc)
            self.stats.reasons[kind] = self.stats.reasons.get(kind, 0) + 1
            return None

    def step(self, timeout_s: float = 0.5) -> int:
        """One poll → detect → publish → commit; returns the messages handled."""
        msgs = self.consumer.poll(timeout_s=timeout_s, max_records=self.max_records)
        if not msgs:
            return 0
        t0 = time.perf_counter()
        batches = [b for b in (self.decode(m.value) for m in msgs) if b is not None]
        changes = self.chain.observe(batches) if batches else []
        self.publish(changes)
        self.consumer.commit()
        self.stats.messages += len(msgs)
        self.stats.last_step_s = time.perf_counter() - t0
        return len(msgs)

    def publish(self, changes: list[Alert]) -> None:
        if not changes:
            return
        self.producer.send(self.topics.alerts, alerts_to_json(changes), key=b"detect")
        self.producer.flush()
        self.stats.published += len(changes)

    def health(self) -> dict[str, Any]:
        return {**asdict(self.stats), **self.chain.health()}

    def close(self) -> None:
        self.consumer.close()
        self.producer.close()


def run(ctx: StageContext, stop: threading.Event) -> None:
    """The detect role's loop."""
    settings: DetectionSettings = ctx.settings.detection
    ctx.bus.ensure_topics(ctx.topics.all())
    chain = DetectionChain(settings, ctx.topology)
    engine = Engine(ctx.bus.consumer([ctx.topics.samples], settings.group), ctx.bus.producer(),
                    ctx.topics, chain)
    ctx.health["detect"] = engine.health
    try:
        while not stop.is_set():
            engine.step()
    finally:
        engine.close()
