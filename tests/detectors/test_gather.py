"""A live detect engine gathers its polls into steps (detectors.gather): a step is due on a share
of the devices or of the interval, a device's wrong clock only brings it sooner, an empty poll
steps what is held, gathering finds what stepping every poll finds, and what is held is not
committed (a member that stops leaves it to the next)."""

from __future__ import annotations

import numpy as np

from detectors.chain import DetectionChain
from detectors.gather import MAX_POLLS, Gathered
from detectors.loop import Engine
from detectors.settings import DetectionSettings
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.model import SampleBatch
from pipeline.topology.model import Topology, spine_leaf
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.samples import encode_batch
from tests.detectors.conftest import STUCK, Feed

S = 1_000_000_000


def fabric() -> Topology:
    """Ten switches (a step is due on a quarter of them: three); host4 on leaf2:Ethernet2."""
    return spine_leaf(2, 8, 2)


def one(device: str, t_s: float) -> SampleBatch:
    ts = np.array([int(t_s * S)], np.int64)
    return SampleBatch(ts, np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint16),
                       np.full(1, -1, np.int16), np.ones(1), np.zeros(1, np.uint8), (device,),
                       ("Ethernet1",))


def test_devices_in_phase_are_stepped_once_a_share_of_them_is_gathered() -> None:
    g = Gathered()
    for k in range(9):
        g.add([one(f"leaf{k}", 100.0)], 1)  # one burst: every device at the same time
        assert not g.due(0.25, 10 * S, known_devices=40)
    g.add([one("leaf9", 100.0)], 1)
    assert g.due(0.25, 10 * S, known_devices=40)


def test_devices_spread_over_the_interval_are_stepped_a_share_of_it_apart() -> None:
    g = Gathered()
    g.add([one("leaf1", 100.0)], 1)
    g.add([one("leaf2", 102.4)], 1)
    assert not g.due(0.25, 10 * S, known_devices=100)
    g.add([one("leaf3", 102.5)], 1)
    assert g.due(0.25, 10 * S, known_devices=100)


def test_a_wrong_clock_brings_a_step_sooner_and_unknowns_step_at_once() -> None:
    ahead, behind = Gathered(), Gathered()
    ahead.add([one("leaf1", 100.0), one("leaf2", 100.0 + 3600)], 1)  # an hour ahead
    behind.add([one("leaf1", 100.0), one("leaf2", 100.0 - 3600)], 1)
    assert ahead.due(0.25, 10 * S, 100) and behind.due(0.25, 10 * S, 100)
    g = Gathered()
    assert not g.due(0.25, 10 * S, 100)  # nothing gathered: nothing to step
    g.add([one("leaf1", 100.0)], 1)
    assert g.due(0.25, 0, 100) and g.due(0.25, 10 * S, 0) and g.due(0.0, 10 * S, 100)
    for _ in range(MAX_POLLS - 1):
        assert not g.due(0.25, 10 * S, 100)
        g.add([one("leaf1", 100.0)], 1)
    assert g.due(0.25, 10 * S, 100)


def _storm(gather: float) -> tuple[list[tuple[str, str, bool, int]], int]:
    """A storm run through an engine that polls one message at a time: the alerts it published
    and the steps it took."""
    topo = fabric()
    bus, topics = MemoryBus(partitions=2), Topics()
    bus.ensure_topics(topics.all())
    reader = bus.consumer([topics.alerts], "read")
    chain = DetectionChain(DetectionSettings(gather_intervals=gather), topo)
    engine = Engine(bus.consumer([topics.samples], "detect"), bus.producer(), topics, chain,
                    max_records=1)
    feed, producer = Feed(topo), bus.producer()
    for k in range(8):
        if k == 3:
            feed.set("leaf2:Ethernet2", **STUCK)
        for b in feed.tick():
            producer.send(topics.samples, encode_batch(b), key=b.devices[0].encode())
        while engine.step(timeout_s=0.02):
            pass
    published = [(a.name, a.entity, a.firing, a.starts_ns)
                 for m in reader.poll(0.2, 1000) for a in decode_alerts(m.value).items]
    return published, engine.stats.steps


def test_gathering_finds_what_stepping_every_poll_finds_in_fewer_steps() -> None:
    gathered, gathered_steps = _storm(0.25)
    every, every_steps = _storm(0.0)
    assert ("pfc_storm", "host4", True) in {a[:3] for a in gathered}
    assert sorted(gathered) == sorted(every)
    switches = len(fabric().switches)
    assert every_steps == 8 * switches  # one per message
    assert gathered_steps < every_steps


def test_what_is_gathered_is_committed_only_once_stepped() -> None:
    topo = fabric()
    bus, topics = MemoryBus(partitions=1), Topics()
    bus.ensure_topics(topics.all())
    feed, producer = Feed(topo), bus.producer()
    chain = DetectionChain(DetectionSettings(), topo)
    engine = Engine(bus.consumer([topics.samples], "detect"), bus.producer(), topics, chain,
                    max_records=1)
    for _ in range(3):  # the chain learns the devices and the interval
        for b in feed.tick():
            producer.send(topics.samples, encode_batch(b), key=b.devices[0].encode())
        while engine.step(timeout_s=0.02):
            pass
    last = feed.tick()[0]
    producer.send(topics.samples, encode_batch(last), key=last.devices[0].encode())
    assert engine.step(timeout_s=0.02) == 1
    assert engine.gathered.messages == 1  # one device of several, same time: held
    engine.consumer.close()  # the member stops with it held
    successor = bus.consumer([topics.samples], "detect")
    again = successor.poll(0.2, 10)
    assert [m.value for m in again] == [encode_batch(last)]
