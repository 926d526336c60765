"""Issue 11.2: absurd but decodable timestamps poison nothing. Samples far outside the window
around the ingest clock (a device in 2200, one in 1970, negative times, a message spanning 200
days) go to the dead-letter topic with the reason; the fabric clock (``/v1/clock``'s reading of
the store), the rollups' watermark and the store's partitions stay where the good devices put
them. On the real broker and both stores, and the window's own rules with a clock of our own."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.ingest.loop import Ingest
from pipeline.ingest.window import LAST_STORABLE_NS, TimeWindow, device_times
from pipeline.model import SampleBatch
from pipeline.store.base import Store
from pipeline.wire.deadletter import DeadLetter, decode_dead_letter
from pipeline.wire.publish import publish_batches

NS = 1_000_000_000
DAY = 86_400 * NS
Y2200 = 7_258_118_400 * NS  # 2200-01-01T00:00:00Z


def with_times(batch: SampleBatch, ts: np.ndarray[Any, Any], device: str | None = None
               ) -> SampleBatch:
    """``batch`` with other times (and, given, another single device's name)."""
    devices = (device,) if device is not None else batch.devices
    codes = np.zeros(len(batch), np.int32) if device is not None else batch.device
    return SampleBatch(np.asarray(ts, np.int64), codes, batch.port, batch.metric, batch.qual,
                       batch.value, batch.flags, devices, batch.ports)


def one_device(batch_factory: Any, device: str, start_ns: int, seconds: int = 10,
               seed: int = 1) -> SampleBatch:
    b = batch_factory(devices=1, ports=2, seconds=seconds, start_ns=start_ns, seed=seed)
    return with_times(b, b.ts_ns, device)


# --- the window's rules, on a clock of our own ---

class Wall:
    def __init__(self, ns: int) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns


def test_rows_outside_the_window_are_refused_with_their_reason(batch_factory: Any) -> None:
    wall = Wall(1_790_000_000 * NS)
    window = TimeWindow(max_past_s=86400, max_ahead_s=300, wall=wall)
    good = one_device(batch_factory, "leaf1", wall.ns - 60 * NS, seconds=4)
    ts = good.ts_ns.copy()
    ts[1], ts[3], ts[5] = Y2200, -5, wall.ns - 3 * DAY
    kept, bad = window.screen(with_times(good, ts), window.clock_ns())
    assert len(kept) == len(good) - 3 and set(kept.ts_ns.tolist()) <= set(good.ts_ns.tolist())
    early, late = bad
    assert (early.index, early.count, late.index, late.count) == (3, 2, 1, 1)
    assert early.reason == "sample time -5 ns is not after 1970 (the ingest clock is " \
        "2026-09-21T14:13:20Z)"
    assert late.reason.startswith("sample time 2200-01-01T00:00:00Z is 63288d9h after")
    assert late.reason.endswith("after the ingest clock (2026-09-21T14:13:20Z); at most 5m is "
                                "accepted (ingest.max_ahead_s)")
    only_old = with_times(good, np.full(len(good), wall.ns - 3 * DAY))
    (old,) = window.screen(only_old, window.clock_ns())[1]
    assert old.reason == ("sample time 2026-09-18T14:13:20Z is 3d before the ingest clock "
                          "(2026-09-21T14:13:20Z); at most 1d is accepted (ingest.max_past_s, "
                          "and the store's retention_days)")
    assert window.refused == 3 + len(good)


def test_the_window_never_reaches_past_what_the_store_keeps_or_its_time_columns_hold(
        batch_factory: Any) -> None:
    wall = Wall(1_790_000_000 * NS)
    window = TimeWindow(max_past_s=30 * 86400, retention_days=14, wall=wall)
    assert window.bounds(wall.ns)[0] == wall.ns - 14 * DAY
    far = TimeWindow(max_ahead_s=300 * 365 * 86400, wall=wall)
    assert far.bounds(wall.ns)[1] == LAST_STORABLE_NS
    b = one_device(batch_factory, "leaf1", LAST_STORABLE_NS + NS, seconds=1)
    (bad,) = far.screen(b, wall.ns)[1]
    assert "past what the store's time columns hold (2106-02-07T06:28:15Z)" in bad.reason


def test_the_clock_follows_a_fabric_that_runs_ahead_and_no_one_device(batch_factory: Any) -> None:
    wall = Wall(1_790_000_000 * NS)
    window = TimeWindow(max_ahead_s=300, wall=wall)
    # a lab at speed 10, 20 minutes into its run: its devices are ~18 minutes ahead
    lab = {f"leaf{i}": wall.ns + 18 * 60 * NS + i * NS for i in range(4)}
    assert window.clock_ns() == wall.ns  # nothing heard: the wall clock
    assert window.lead_ns(lab) == 18 * 60 * NS + NS  # the lower median of four
    window.accepted(lab)
    good = (18 * 60 * NS, 18 * 60 * NS + 3 * NS)  # the good devices' leads, first and last
    # devices far ahead stay outside the clock while they are not more than half of the fabric
    for rogues in range(1, 5):
        lead = window.lead_ns({f"rogue{i}": Y2200 for i in range(rogues)})
        assert good[0] <= lead <= good[1], rogues
    assert window.lead_ns({f"rogue{i}": Y2200 for i in range(5)}) > good[1]
    # a device's time is the median of its message: one absurd sample does not make it
    b = one_device(batch_factory, "leaf3", wall.ns, seconds=5)
    ts = b.ts_ns.copy()
    ts[0] = Y2200
    (time_of,) = device_times(with_times(b, ts)).values()
    assert int(b.ts_ns.min()) <= time_of <= int(b.ts_ns.max())
    # data arriving late never pull the clock back behind the wall clock
    late = TimeWindow(wall=wall)
    late.accepted({f"leaf{i}": wall.ns - 3600 * NS for i in range(3)})
    assert late.clock_ns() == wall.ns
    # devices not heard for idle_s no longer count
    wall.ns += 121 * NS
    assert window.lead_ns() == 0


def test_device_times_of_a_message_of_several_devices(batch_factory: Any) -> None:
    b = batch_factory(devices=3, ports=1, seconds=5, start_ns=10 * NS)
    times = device_times(b)
    assert set(times) == {"leaf0", "leaf1", "leaf2"}
    for d, name in enumerate(b.devices):
        mine = np.sort(b.ts_ns[b.device == d])
        assert times[name] == int(mine[(len(mine) - 1) // 2])


def test_a_fabric_running_ahead_is_stored_and_a_device_in_2200_is_not(
        chdb_store: Store, batch_factory: Any) -> None:
    """On the in-process bus: a lab at speed, 20 minutes ahead of the wall clock, is stored
    from the first poll of a fresh ingest; the same poll's device in 2200 is dead-lettered."""
    bus, topics = MemoryBus(partitions=4), Topics("a.")
    ahead = (time.time_ns() // NS + 20 * 60) * NS
    lab = [one_device(batch_factory, f"leaf{i}", ahead, seed=i) for i in range(4)]
    rogue = one_device(batch_factory, "leaf9", Y2200, seed=9)
    publish_batches(bus.producer(), topics, [*lab, rogue])
    ingest = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    while ingest.step():
        pass
    ingest.close()
    stored = int(chdb_store.query(f"SELECT count() AS n FROM {chdb_store.database}.samples "
                                  "FINAL")["n"][0])
    assert stored == sum(len(b) for b in lab) and ingest.stats.out_of_window == len(rogue)
    assert 19 * 60 < ingest.stats.clock_lead_s < 21 * 60


# --- on the real broker, both stores ---

def read_letters(bus: Any, topic: str, want: int, timeout_s: float = 60) -> list[DeadLetter]:
    consumer = bus.consumer([topic], "watch")
    letters: list[DeadLetter] = []
    deadline = time.monotonic() + timeout_s
    while len(letters) < want and time.monotonic() < deadline:
        letters.extend(decode_dead_letter(m.value) for m in consumer.poll(timeout_s=0.5))
    consumer.close()
    return letters


@pytest.mark.integration
@pytest.mark.slow
def test_absurd_times_go_to_dead_letters_and_move_no_clock_on_the_real_broker(
        kafka_settings: Any, store: Store, batch_factory: Any, unique_name: Any) -> None:
    from pipeline.bus.kafka import KafkaBus
    from pipeline.store.rollup.job import RollupJob
    from ui.query.clock import FabricClock

    topics = Topics(unique_name("tw") + ".")
    bus = KafkaBus(kafka_settings)
    bus.ensure_topics(topics.all())
    start = (time.time_ns() // NS - 120) * NS
    good = [one_device(batch_factory, f"leaf{i}", start, seconds=60, seed=i) for i in range(3)]
    newest_good = max(int(b.ts_ns.max()) for b in good)
    # leaf0's next poll has one sample in 2200 among normal ones
    poll = one_device(batch_factory, "leaf0", start + 60 * NS, seconds=5, seed=7)
    ts = poll.ts_ns.copy()
    ts[3] = Y2200
    mixed = with_times(poll, ts)
    rogue = one_device(batch_factory, "rogue", Y2200, seconds=5, seed=8)  # all of it in 2200
    days = 200  # one sample a day over 200 days, the newest half an hour ago
    span = with_times(one_device(batch_factory, "leaf1", 0, seconds=days // 4, seed=9),
                      time.time_ns() - 1800 * NS - np.arange(days, dtype=np.int64) * DAY)
    negative = with_times(one_device(batch_factory, "leaf2", 0, seconds=1, seed=10),
                          -np.arange(1, 5, dtype=np.int64) * NS)
    producer = bus.producer()
    sent = publish_batches(producer, topics, [*good, mixed, rogue, span, negative])
    producer.flush(60)
    producer.close()

    ingest = Ingest(bus, store, topics, max_wait_s=0.3)
    stop = threading.Event()
    runner = threading.Thread(target=ingest.run, args=(stop,), daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 90
        while ingest.stats.messages < sent and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(30)
    assert ingest.stats.messages == sent

    want = sum(len(b) for b in good) + len(mixed) - 1 + 1  # the 2200 sample out, today's in
    db = store.database
    assert int(store.query(f"SELECT count() AS n FROM {db}.samples FINAL")["n"][0]) == want
    refused = 1 + len(rogue) + (days - 1) + len(negative)
    assert ingest.stats.out_of_window == refused

    letters = {d.key: d for d in read_letters(bus, topics.deadletter, 4)}
    assert set(letters) == {"leaf0", "rogue", "leaf1", "leaf2"}
    assert letters["leaf0"].kept == len(mixed) - 1 and letters["leaf0"].items[0].index == 3
    assert "2200-01-01T00:00:00Z is 6321" in letters["leaf0"].reason
    assert "after the ingest clock" in letters["leaf0"].reason
    assert letters["rogue"].kept == 0 and letters["rogue"].items[0].count == len(rogue)
    assert letters["leaf1"].kept == 1 and letters["leaf1"].items[0].count == days - 1
    assert "before the ingest clock" in letters["leaf1"].reason
    assert letters["leaf2"].kept == 0 and "not after 1970" in letters["leaf2"].reason
    for letter in letters.values():
        assert letter.topic == topics.samples and letter.group == "ingest"

    # the read side's clock is where the good devices are, not in 2200
    assert FabricClock(store).now().now_ns == max(newest_good, int(mixed.ts_ns[mixed.ts_ns <
                                                                           Y2200].max()))
    # the rollups' watermark never passed the ingest clock
    marks = store.query(f"SELECT max(event_ns) AS e, max(bucket_ns) AS b FROM {db}.rollup_marks")
    assert int(marks["e"][0]) <= time.time_ns() and int(marks["b"][0]) < time.time_ns()
    job = RollupJob(store, store.settings)
    job.run_once()
    state = store.query(f"SELECT max(event_ns) AS e FROM {db}.rollup_state")
    assert 0 < int(state["e"][0]) <= time.time_ns()
    # a message over 200 days made no 200 partitions: today's (and yesterday's, near midnight)
    parts = store.query(f"SELECT count(DISTINCT partition) AS p FROM system.parts WHERE "
                        f"database = '{db}' AND table = 'samples' AND active")
    assert 1 <= int(parts["p"][0]) <= 2
    bus.close()
