"""Replay: the incidents detection raises over stored history are those it raised live."""

from __future__ import annotations

import time

from click.testing import CliRunner

from detectors.chain import DetectionChain
from detectors.replay import store_batches, topic_batches
from detectors.settings import DetectionSettings
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.model import SampleBatch
from pipeline.wire.samples import encode_batch
from tests.detectors.conftest import EPOCH, STUCK, Feed, small

#: recent enough for the store's retention (old rows are dropped on insert)
RECENT = (time.time_ns() // 10**9 - 3600) * 10**9


def storm_history(epoch: int = EPOCH) -> list[SampleBatch]:
    feed = Feed(small(), epoch=epoch)
    out = [b for _ in range(4) for b in feed.tick()]
    feed.set("leaf2:Ethernet1", **STUCK)
    out += [b for _ in range(4) for b in feed.tick()]
    return out


def incidents(changes: list) -> set[tuple[str, str, int]]:
    return {(a.name, a.entity, a.updated_ns) for a in changes if a.root_cause and a.firing}


def test_replay_from_the_store_raises_what_live_detection_raised(chdb_store):
    history = storm_history(RECENT)
    live = DetectionChain(DetectionSettings(), small())
    raised_live = incidents([a for b in history for a in live.observe([b])])
    assert {(n, e) for n, e, _ in raised_live} == {("pfc_storm", "host3")}
    for b in history:
        chdb_store.insert_samples(b)
    chdb_store.insert_samples(history[0])  # at-least-once: a duplicate delivery collapses
    again = DetectionChain(DetectionSettings(), small())
    replayed = [a for b in store_batches(chdb_store, RECENT, RECENT + 20 * 10**9, window_s=3.0)
                for a in again.observe([b])]
    assert incidents(replayed) == raised_live


def test_replay_from_a_topic_skips_garbage():
    bus = MemoryBus()
    topics = Topics()
    bus.ensure_topics(topics.all())
    producer = bus.producer()
    producer.send(topics.samples, b"garbage")
    for b in storm_history():
        producer.send(topics.samples, encode_batch(b), key=b.devices[0].encode())
    errors: list[str] = []
    chain = DetectionChain(DetectionSettings(), small())
    changes = [a for b in topic_batches(bus, topics.samples, idle_s=0.3, decode_errors=errors)
               for a in chain.observe([b])]
    assert len(errors) == 1
    assert {(n, e) for n, e, _ in incidents(changes)} == {("pfc_storm", "host3")}


def test_replay_command_needs_a_range():
    from rocewatch.cli.replay import replay

    result = CliRunner().invoke(replay, [])
    assert result.exit_code != 0 and "--start" in result.output
