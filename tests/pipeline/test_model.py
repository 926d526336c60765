"""The data model: columnar batches, the builder, alert identity."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import DecodeError
from pipeline.metrics import metric_id
from pipeline.model import Alert, BatchBuilder, SampleBatch, fingerprint

PFC_RX = metric_id("pfc_rx_frames")
OCC = metric_id("queue_occupancy_bytes")


def test_builder_makes_columns_and_keeps_vocabularies() -> None:
    b = BatchBuilder()
    b.add(10, "leaf1", "Ethernet1", PFC_RX, 3, 5.0)
    b.add(10, "leaf1", "", OCC, 0, 7.0)
    first = b.build()
    assert len(first) == 2 and len(b) == 0
    assert first.ts_ns.dtype == np.int64 and first.metric.dtype == np.uint16
    assert list(first.port_names()) == ["Ethernet1", ""]
    assert list(first.is_counter) == [True, False]
    b.add(20, "leaf2", "Ethernet1", PFC_RX, 3, 6.0)
    second = b.build()
    assert list(second.rows()) == [(20, "leaf2", "Ethernet1", "pfc_rx_frames", 3, 6.0, 0)]


def test_concat_merges_vocabularies() -> None:
    b1, b2 = BatchBuilder(), BatchBuilder()
    b1.add(1, "leaf1", "Ethernet1", PFC_RX, 3, 1.0)
    b2.add(2, "spine1", "Ethernet9", PFC_RX, 3, 2.0)
    b2.add(3, "leaf1", "Ethernet1", PFC_RX, 3, 3.0)
    joined = SampleBatch.concat([b1.build(), SampleBatch.empty(), b2.build()])
    assert [(r[1], r[2], r[5]) for r in joined.rows()] == [
        ("leaf1", "Ethernet1", 1.0), ("spine1", "Ethernet9", 2.0), ("leaf1", "Ethernet1", 3.0)]
    assert len(joined.devices) == 2
    assert len(SampleBatch.concat([])) == 0


def test_concat_of_batches_sharing_a_vocabulary_is_the_row_by_row_join() -> None:
    ports = ("Ethernet2", "Ethernet1", "")
    batches = []
    for i, device in enumerate(["leaf1", "leaf2", "leaf3"]):
        # the same port vocabulary: one tuple, then an equal one of its own
        vocab = ports if i < 2 else tuple(list(ports))
        batches.append(SampleBatch(
            np.array([i, i], np.int64), np.zeros(2, np.int32), np.array([1, 2 - i % 2], np.int32),
            np.full(2, PFC_RX, np.uint16), np.full(2, 3, np.int16), np.array([i, -i], float),
            np.zeros(2, np.uint8), (device,), vocab))
    joined = SampleBatch.concat(batches)
    assert [r for b in batches for r in b.rows()] == list(joined.rows())
    assert joined.ports == ports  # merged in the order the vocabularies name them
    assert joined.devices == ("leaf1", "leaf2", "leaf3")


def test_take_and_validate() -> None:
    b = BatchBuilder()
    for i in range(4):
        b.add(i, "leaf1", f"Ethernet{i}", PFC_RX, 3, float(i))
    batch = b.build()
    assert [r[5] for r in batch.take(batch.value > 1).rows()] == [2.0, 3.0]
    broken = SampleBatch(batch.ts_ns, batch.device + 5, batch.port, batch.metric, batch.qual,
                         batch.value, batch.flags, batch.devices, batch.ports)
    with pytest.raises(DecodeError, match="device code"):
        broken.validate()


def test_fingerprint_is_alertmanagers() -> None:
    # an empty label set hashes to FNV-1a 64's offset basis, as in prometheus/common
    assert fingerprint({}) == "cbf29ce484222325"
    a = Alert(name="faulty_link", entity="leaf3~spine2", starts_ns=1, updated_ns=1)
    b = a.model_copy(update={"updated_ns": 9, "evidence": {"fcs_rate": 1e-5}})
    assert a.fingerprint == b.fingerprint  # identity is the label set, not the state
    c = a.model_copy(update={"entity": "leaf3~spine1"})
    assert c.fingerprint != a.fingerprint
    assert a.identity == {"alertname": "faulty_link", "entity": "leaf3~spine2"}
