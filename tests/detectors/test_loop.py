"""Alert state on event time, and the detect loop over a real in-process bus."""

from __future__ import annotations

import threading

from detectors.chain import DetectionChain
from detectors.lifecycle import AlertBook
from detectors.loop import Engine, run
from detectors.settings import DetectionSettings
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.model import Alert
from pipeline.stage import StageContext
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.samples import encode_batch
from rocewatch.settings import Settings
from tests.detectors.conftest import Feed, at_s, small

S = 1_000_000_000


def alert(name: str, t: int, **kw: object) -> Alert:
    return Alert(name=name, entity="x", starts_ns=t * S, updated_ns=t * S, **kw)


def test_book_publishes_firing_updates_and_resolution_once_each():
    book = AlertBook(update_every_s=10)
    first = book.reconcile([alert("a", 1)], 1 * S)
    assert [a.firing for a in first] == [True]
    assert book.reconcile([alert("a", 2)], 2 * S) == []  # nothing changed
    changed = book.reconcile([alert("a", 3, severity="critical")], 3 * S)
    assert changed and changed[0].starts_ns == 1 * S  # the identity keeps its start
    periodic = book.reconcile([alert("a", 13)], 13 * S)
    assert len(periodic) == 1
    resolved = book.reconcile([], 14 * S)
    assert resolved[0].ends_ns == 14 * S and not resolved[0].firing
    assert book.reconcile([], 15 * S) == []


def test_book_refreshes_an_unchanged_symptom_less_often_than_an_incident():
    book = AlertBook(update_every_s=10, symptom_every_s=60)
    book.reconcile([alert("root", 0), alert("sym", 0, root_cause=False)], 0)
    refreshed: list[str] = []
    for t in range(1, 121):
        refreshed += [a.name for a in book.reconcile(
            [alert("root", t), alert("sym", t, root_cause=False)], t * S)]
    assert refreshed.count("root") == 12 and refreshed.count("sym") == 2
    # a symptom whose verdict changes is published at once, whatever its refresh period
    moved = book.reconcile([alert("root", 121),
                            alert("sym", 121, root_cause=False, severity="critical")], 121 * S)
    assert [a.name for a in moved] == ["sym"]


def test_engine_skips_garbage_and_publishes_alert_changes():
    topo = small()
    bus = MemoryBus(partitions=2)
    topics = Topics()
    bus.ensure_topics(topics.all())
    reader = bus.consumer([topics.alerts], "test")
    settings = DetectionSettings()
    chain = DetectionChain(settings, topo)
    engine = Engine(bus.consumer([topics.samples], "detect"), bus.producer(), topics, chain)
    feed = Feed(topo)
    producer = bus.producer()
    producer.send(topics.samples, b"not a sample batch")
    for _ in range(3):
        for b in feed.tick():
            producer.send(topics.samples, encode_batch(b), key=b.devices[0].encode())
    feed.set("leaf2:Ethernet2", pfc_rx_frames__3=23842.0, pfc_rx_pause_us__3=1e6,
             queue_tx_octets__3=0.0, if_out_octets=0.0)
    for _ in range(2):
        for b in feed.tick():
            producer.send(topics.samples, encode_batch(b), key=b.devices[0].encode())
    while engine.step(timeout_s=0.05):
        pass
    assert engine.stats.undecodable == 1
    published = [a for m in reader.poll(0.2, 1000) for a in decode_alerts(m.value).items]
    storm = [a for a in published if a.name == "pfc_storm"]
    assert storm and storm[0].entity == "host4" and at_s(storm[0].updated_ns) == 5.0


def test_run_loop_stops_and_reports_health():
    topo = small()
    bus = MemoryBus()
    ctx = StageContext(settings=Settings(detection=DetectionSettings()), bus=bus,
                       topics=Topics(), topology=topo)
    stop = threading.Event()
    thread = threading.Thread(target=run, args=(ctx, stop))
    thread.start()
    try:
        for _ in range(50):
            if "detect" in ctx.health:
                break
            stop.wait(0.05)
        assert ctx.health["detect"]()["messages"] == 0
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
