"""gnmic's Kafka ``event`` output as an input: decoding, and the collector on a real broker."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from collectors.gnmi.mapping import PathMapper
from collectors.gnmic_kafka import EventDecoder, GnmicKafkaCollector, GnmicKafkaOptions
from collectors.profile import GnmiProfile, load_profile
from pipeline.errors import DecodeError
from pipeline.model import BatchBuilder, SampleBatch
from pipeline.wire.deadletter import decode_dead_letter

TS = 1_796_000_000_000_000_000


@pytest.fixture
def decoder() -> EventDecoder:
    profile = load_profile("openconfig")
    assert isinstance(profile, GnmiProfile)
    return EventDecoder(PathMapper(profile))


def event(values: dict[str, Any], **tags: str) -> dict[str, Any]:
    return {"name": "rocewatch", "timestamp": TS,
            "tags": {"source": "leaf1:57400", "subscription-name": "rocewatch", **tags},
            "values": values}


def rows(decoder: EventDecoder, payload: Any) -> list[tuple[Any, ...]]:
    builder = BatchBuilder()
    decoder.decode(json.dumps(payload).encode(), builder)
    return sorted(builder.build().rows())


def test_interface_counters_strings_and_numbers(decoder: EventDecoder) -> None:
    got = rows(decoder, [event({
        "/interfaces/interface/state/counters/in-octets": "18446744073709551000",
        "/interfaces/interface/state/counters/out-pkts": 42,
    }, interface_name="Ethernet8")])
    assert got == [(TS, "leaf1", "Ethernet8", "if_in_octets", -1, 1.8446744073709552e19, 0),
                   (TS, "leaf1", "Ethernet8", "if_out_pkts", -1, 42.0, 0)]


def test_queues_and_pfc_priorities_carry_their_qualifier(decoder: EventDecoder) -> None:
    got = rows(decoder, [
        event({"/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts": "7"},
              **{"interface_interface-id": "Ethernet0", "queue_name": "3"}),
        event({"/openconfig-qos:qos/interfaces/interface/pfc/pfc-priorities/pfc-priority/"
               "state/statistics/pause-frames-rx": 9},
              **{"interface_interface-id": "Ethernet0", "pfc-priority_dot1p": "3"}),
    ])
    assert got == [(TS, "leaf1", "Ethernet0", "pfc_rx_frames", 3, 9.0, 0),
                   (TS, "leaf1", "Ethernet0", "queue_ecn_marked_pkts", 3, 7.0, 0)]


def test_an_origin_and_enum_names(decoder: EventDecoder) -> None:
    got = rows(decoder, event({"openconfig:/interfaces/interface/state/oper-status": "DOWN",
                               "/interfaces/interface/state/admin-status": "UP"},
                              interface_name="Ethernet4"))
    assert [(r[3], r[5]) for r in got] == [("if_admin_status", 1.0), ("if_oper_status", 2.0)]


def test_unmapped_paths_are_counted_not_refused(decoder: EventDecoder) -> None:
    got = rows(decoder, event({"/system/state/hostname": "leaf1",
                               "/interfaces/interface/state/counters/in-pkts": 5},
                              interface_name="Ethernet0"))
    assert [r[3] for r in got] == ["if_in_pkts"]
    assert decoder.unmapped == {"/system/state/hostname": 1}


@pytest.mark.parametrize("payload, match", [
    (b"not json", "not JSON"),
    (b"[1]", "not an object"),
    (json.dumps({"timestamp": "soon", "tags": {}, "values": {}}).encode(), "timestamp"),
    (json.dumps({"timestamp": TS, "tags": {"interface_name": "x"}, "values": {}}).encode(),
     "names the device"),
])
def test_garbage_is_a_decode_error_and_adds_nothing(decoder: EventDecoder, payload: bytes,
                                                    match: str) -> None:
    builder = BatchBuilder()
    good = event({"/interfaces/interface/state/counters/in-pkts": 5}, interface_name="E0")
    data = payload if payload.startswith(b"not") else \
        json.dumps([good, json.loads(payload)]).encode()
    with pytest.raises(DecodeError, match=match):
        decoder.decode(data, builder)
    assert len(builder) == 0


def test_the_collector_reads_a_topic_and_dead_letters_garbage(kafka_settings: Any,
                                                              unique_name: Any) -> None:
    from pipeline.bus.kafka import KafkaBus

    topic, prefix = unique_name("gnmic"), unique_name("rw") + "."
    options = GnmicKafkaOptions(kafka=kafka_settings.kafka, topic=topic, topic_prefix=prefix)
    emitted: list[SampleBatch] = []
    collector = GnmicKafkaCollector("gnmic", options, emit=emitted.append)
    bus = KafkaBus(kafka_settings)
    bus.ensure_topics([topic, prefix + "deadletter"])
    letters = bus.consumer([prefix + "deadletter"], "watch")
    producer = bus.producer()
    for i in range(5):  # split-events style (one object) and arrays
        one = event({"/interfaces/interface/state/counters/in-octets": str(100 + i)},
                    interface_name="Ethernet0")
        one["timestamp"] = TS + i
        producer.send(topic, json.dumps(one if i % 2 else [one]).encode(), key=b"leaf1")
    producer.send(topic, b"\x00garbage", key=b"leaf1")
    producer.flush()
    stop = threading.Event()
    runner = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while sum(len(b) for b in emitted) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    runner.join(15)
    got = sorted(r for b in emitted for r in b.rows())
    assert [(r[0] - TS, r[5]) for r in got] == [(i, 100.0 + i) for i in range(5)]
    dead: list[Any] = []
    deadline = time.monotonic() + 15
    while not dead and time.monotonic() < deadline:
        dead.extend(letters.poll(timeout_s=0.5))
    [letter] = [decode_dead_letter(m.value) for m in dead]
    assert (letter.topic, letter.key, letter.group) == (topic, "leaf1", "gnmic-input")
    assert "not JSON" in letter.reason and letter.value() == b"\x00garbage"
    assert collector.health()["dead_letters"] == 1
    letters.close()
    producer.close()
    bus.close()
