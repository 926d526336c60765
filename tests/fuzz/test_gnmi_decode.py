"""Property-based tests of the gNMI hot path (``collectors/gnmi/decode.py``): whatever a target
sends, bytes or well-formed SubscribeResponses of any paths and values, the decoder counts bad
input and raises nothing; what it hands on is a valid batch that the bus carries unchanged; and a
mapped counter it is sent comes out as that sample."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.clocks import DeviceClock
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import PathMapper
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, load_profile
from pipeline.metrics import CATALOG
from pipeline.wire.samples import decode_batch, encode_batch
from tests.fuzz.budget import FUZZ

PROFILES = ("openconfig", "sonic", "arista", "cumulus")
_MAPPERS: dict[str, PathMapper] = {}

#: element names of the paths the profiles map, and some they do not
ELEMENTS = ("interfaces", "interface", "state", "counters", "in-octets", "out-octets",
            "oper-status", "admin-status", "in-errors", "ethernet", "in-symbol-error", "qos",
            "queues", "queue", "output", "pfc", "pfc-priorities", "pfc-priority", "statistics",
            "pause-frames-rx", "pause-frames-tx", "max-queue-len", "COUNTERS", "Ethernet0",
            "SAI_PORT_STAT_IF_IN_OCTETS", "openconfig-interfaces:interfaces", "", "x")
KEYS = ("name", "interface-id", "dot1p", "id", "priority")


def decoder(profile: str) -> GnmiDecoder:
    if profile not in _MAPPERS:  # one mapper per profile, as a collector shares it
        loaded = load_profile(profile)
        assert isinstance(loaded, GnmiProfile)
        _MAPPERS[profile] = PathMapper(loaded)
    health = TargetHealth("sw1", "gnmi", "x:1", profile, 1.0, DeviceClock())
    return GnmiDecoder("sw1", _MAPPERS[profile], health, ErrorTally("fuzz"))


text = st.text(max_size=12)
elements = st.lists(st.tuples(st.sampled_from(ELEMENTS) | text,
                              st.dictionaries(st.sampled_from(KEYS) | text,
                                              st.sampled_from(("Ethernet3", "3", "0", "")) | text,
                                              max_size=2)), max_size=9)


def path(elems: list[tuple[str, dict[str, str]]], origin: str = "") -> pb.Path:
    return pb.Path(origin=origin, elem=[pb.PathElem(name=n, key=k) for n, k in elems])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(ELEMENTS) | text,
                                                                  inner, max_size=4),
    max_leaves=12)


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()


typed_values = st.one_of(
    st.builds(lambda v: pb.TypedValue(uint_val=v), st.integers(0, 2**64 - 1)),
    st.builds(lambda v: pb.TypedValue(int_val=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: pb.TypedValue(double_val=v), st.floats()),
    st.builds(lambda v: pb.TypedValue(float_val=v), st.floats(width=32)),
    st.builds(lambda v: pb.TypedValue(bool_val=v), st.booleans()),
    st.builds(lambda v: pb.TypedValue(string_val=v), text | st.sampled_from(("UP", "DOWN", "-5",
                                                                             "1e999", "nan"))),
    st.builds(lambda v: pb.TypedValue(ascii_val=v), text),
    st.builds(lambda v: pb.TypedValue(bytes_val=v), st.binary(max_size=8)),
    st.builds(lambda v: pb.TypedValue(json_ietf_val=as_json(v)), json_values),
    st.builds(lambda v: pb.TypedValue(json_val=v), st.binary(max_size=20)),
    st.builds(lambda d, p: pb.TypedValue(decimal_val=pb.Decimal64(digits=d, precision=p)),
              st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**32 - 1)),
    st.just(pb.TypedValue()),
)


@st.composite
def responses(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(("update", "update", "update", "sync", "error", "empty")))
    if kind == "sync":
        return pb.SubscribeResponse(sync_response=True).SerializeToString()
    if kind == "error":
        return pb.SubscribeResponse(error=pb.Error(message=draw(text))).SerializeToString()
    if kind == "empty":
        return b""
    n = pb.Notification(timestamp=draw(st.integers(-(2**63), 2**63 - 1)),
                        prefix=path(draw(elements), draw(st.sampled_from(("", "openconfig")))))
    for _ in range(draw(st.integers(0, 6))):
        n.update.add(path=path(draw(elements)), val=draw(typed_values))
    for _ in range(draw(st.integers(0, 2))):
        n.delete.append(path(draw(elements)))
    return pb.SubscribeResponse(update=n).SerializeToString()


def handed_on(dec: GnmiDecoder) -> None:
    """What the decoder hands on is a valid batch, carried by the bus unchanged."""
    batch = dec.take()
    if batch is None:
        return
    batch.validate()
    assert np.isfinite(batch.value).all()
    counters = batch.is_counter
    assert (batch.value[counters] >= 0).all()
    back = decode_batch(encode_batch(batch))
    assert list(back.rows()) == list(batch.rows())


@FUZZ
@given(st.sampled_from(PROFILES), st.lists(st.binary(max_size=200), max_size=4),
       st.booleans())
def test_random_bytes_from_a_target_raise_nothing(profile: str, messages: list[bytes],
                                                   initial: bool) -> None:
    dec = decoder(profile)
    for data in messages:
        dec.feed(data, 1.0, initial)
    handed_on(dec)


@FUZZ
@given(st.sampled_from(PROFILES), st.lists(responses(), min_size=1, max_size=5), st.booleans())
def test_any_subscribe_response_is_decoded_or_counted_never_raised(
        profile: str, messages: list[bytes], reconnect: bool) -> None:
    dec = decoder(profile)
    for i, data in enumerate(messages):
        if reconnect and i == len(messages) // 2:
            dec.begin_session()
        dec.feed(data, float(i), initial=reconnect)
    handed_on(dec)


@FUZZ
@given(st.integers(1, 2**62), st.integers(0, 2**64 - 1), st.sampled_from(("Ethernet3", "Eth1/1")),
       st.sampled_from(("uint", "json_ietf")))
def test_a_mapped_counter_comes_out_as_its_sample(ts: int, value: int, port: str,
                                                  form: str) -> None:
    dec = decoder("openconfig")
    val = (pb.TypedValue(uint_val=value) if form == "uint"
           else pb.TypedValue(json_ietf_val=as_json(str(value))))
    n = pb.Notification(timestamp=ts, prefix=path([], "openconfig"))
    n.update.add(path=path([("interfaces", {}), ("interface", {"name": port}), ("state", {}),
                            ("counters", {}), ("in-octets", {})]), val=val)
    dec.feed(pb.SubscribeResponse(update=n).SerializeToString(), 1.0)
    batch = dec.take()
    assert batch is not None
    assert list(batch.rows()) == [(ts, "sw1", port, "if_in_octets", -1, float(value),
                                   int(batch.flags[0]))]
    assert CATALOG[int(batch.metric[0])].name == "if_in_octets"
    assert dec.health.errors == {}
