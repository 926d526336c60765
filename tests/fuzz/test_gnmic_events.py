"""Property-based tests of the gnmic-event input (``collectors/gnmic_kafka.py``): whatever a
Kafka message holds, the decoder raises nothing but :class:`~pipeline.errors.DecodeError`
(nothing of a refused message is added); what it adds builds into a valid batch that the bus
carries unchanged, with finite values and no negative counters; and a mapped leaf it is given
comes out as its sample."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from collectors.gnmi.mapping import PathMapper
from collectors.gnmic_kafka import EventDecoder
from collectors.profile import GnmiProfile, load_profile
from pipeline.errors import DecodeError
from pipeline.model import BatchBuilder
from pipeline.times import MAX_INSTANT_NS
from pipeline.wire.samples import decode_batch, encode_batch
from tests.fuzz.budget import FUZZ

_PROFILE = load_profile("openconfig")
assert isinstance(_PROFILE, GnmiProfile)
MAPPER = PathMapper(_PROFILE)

PATHS = ("/interfaces/interface/state/counters/in-octets",
         "/interfaces/interface/state/counters/out-pkts",
         "/interfaces/interface/state/oper-status",
         "/openconfig-interfaces:interfaces/interface/state/counters/in-errors",
         "openconfig:/interfaces/interface/state/counters/out-octets",
         "/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts",
         "/qos/interfaces/interface/pfc/pfc-priorities/pfc-priority/state/statistics/"
         "pause-frames-rx", "/nowhere", "")
TAGS = ("source", "interface_name", "interface_interface-id", "queue_name", "pfc-priority_dot1p",
        "subscription-name", "/qos/interfaces/interface/output/queues/queue_queue_name")

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
           | st.text(max_size=10) | st.sampled_from(("UP", "DOWN", "123", "-5", "1e999", "nan",
                                                     "1" * 400)))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
events = st.fixed_dictionaries(
    {}, optional={
        "name": st.text(max_size=8),
        "timestamp": st.integers(-(2**70), 2**70) | st.sampled_from((1_796_000_000 * 10**9,))
        | values,
        "tags": st.dictionaries(st.sampled_from(TAGS) | st.text(max_size=10),
                                st.sampled_from(("leaf1:57400", "leaf1", "Ethernet0", "3", ""))
                                | st.text(max_size=12) | scalars, max_size=5) | values,
        "values": st.dictionaries(st.sampled_from(PATHS) | st.text(max_size=20), values,
                                  max_size=4) | values,
    })
documents = st.lists(events | values, max_size=4) | events | values


def built(builder: BatchBuilder) -> None:
    """What was added builds into a valid batch the bus carries unchanged."""
    batch = builder.build()
    batch.validate()
    assert np.isfinite(batch.value).all()
    assert (batch.value[batch.is_counter] >= 0).all()
    assert list(decode_batch(encode_batch(batch)).rows()) == list(batch.rows())


@FUZZ
@given(documents)
def test_any_json_is_decoded_or_refused_with_our_error(doc: Any) -> None:
    decoder, builder = EventDecoder(MAPPER), BatchBuilder()
    try:
        added = decoder.decode(json.dumps(doc).encode(), builder)
    except DecodeError:
        assert not builder.build().ts_ns.size  # nothing of a refused message is added
        return
    assert added == decoder.samples
    built(builder)


@FUZZ
@given(st.binary(max_size=300) | st.none())
def test_bytes_that_are_not_json_are_refused_with_our_error(data: bytes | None) -> None:
    with contextlib.suppress(DecodeError):
        EventDecoder(MAPPER).decode(data, BatchBuilder())


@FUZZ
@given(st.integers(1, MAX_INSTANT_NS - 1), st.integers(0, 2**64 - 1), st.booleans(),
       st.sampled_from(("leaf1:57400", "leaf7", "z2-leaf1:6030")),
       st.sampled_from(("Ethernet0", "Ethernet1/1")))
def test_a_mapped_counter_comes_out_as_its_sample(ts: int, value: int, as_text: bool,
                                                  source: str, port: str) -> None:
    decoder, builder = EventDecoder(MAPPER), BatchBuilder()
    doc = {"name": "sub", "timestamp": ts,
           "tags": {"source": source, "interface_name": port},
           "values": {"/interfaces/interface/state/counters/in-octets":
                      str(value) if as_text else value}}
    assert decoder.decode(json.dumps(doc).encode(), builder) == 1
    device = source.rsplit(":", 1)[0] if source.rsplit(":", 1)[-1].isdigit() else source
    assert list(builder.build().rows()) == [(ts, device, port, "if_in_octets", -1,
                                             float(value), 0)]


#: mapped leaves with the tags that key them
LEAVES = (("/interfaces/interface/state/counters/in-octets", {"interface_name": "Ethernet0"}),
          ("/interfaces/interface/state/oper-status", {"interface_name": "Ethernet0"}),
          ("/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts",
           {"interface_interface-id": "Ethernet0", "queue_name": "3"}))


@FUZZ
@given(st.integers(-(2**70), 2**70) | st.integers(2**62, 2**64), scalars,
       st.sampled_from(LEAVES), st.integers(1, 3))
def test_a_mapped_leaf_of_any_time_and_value_is_a_valid_sample_or_refused(
        ts: int, value: Any, leaf: tuple[str, dict[str, str]], events: int) -> None:
    path, tags = leaf
    doc = [{"timestamp": ts, "tags": {"source": "leaf1:57400", **tags}, "values": {path: value}}
           for _ in range(events)]
    decoder, builder = EventDecoder(MAPPER), BatchBuilder()
    try:
        decoder.decode(json.dumps(doc).encode(), builder)
    except DecodeError:
        assert not builder.build().ts_ns.size
        return
    built(builder)
