"""The compiled scan (``collectors/gnmi/wire.py``) against the protobuf path it stands in for:
fed the same messages, a decoder that scans and one that does not hand on byte-identical batches
and count the same errors, for every lab dialect's stream (made in-process by the lab's own
switch models, as a recording holds them), for malformed and edge-case messages, and for
mutations of real ones."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.clocks import DeviceClock
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import PathMapper
from collectors.gnmi.subscription import subscribe_requests
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, load_profile
from lab.gnmi.dialects import SwitchModel
from lab.gnmi.subscribe import SubscriptionPlan
from lab.inventory import plan_agents
from lab.runner import SimOptions, published_layout
from lab.scenario.load import parse_scenario
from lab.wiring import build_wiring
from pipeline.wire.samples import encode_batch
from tests.collectors.gnmi_target import notification
from tests.fuzz.budget import FUZZ
from tests.fuzz.test_gnmi_decode import responses

DIALECTS = ("openconfig", "arista", "sonic")
T0 = 1_800_000_000_000_000_000
LAB = {"format": 1, "name": "wire", "seed": 5, "duration_s": 600, "sample_interval_s": 1,
       "fabric": {"spines": 2, "leaves": 3, "hosts_per_leaf": 4,
                  "agents": {"gnmi": 1.0, "snmp": 0.0}, "profiles": list(DIALECTS)},
       "routing": "ecmp",
       "traffic": [{"pattern": "allreduce", "hosts": "all", "load": 0.5, "qps_per_flow": 2}],
       "faults": []}


@cache
def lab_stream(dialect: str, intervals: int = 4) -> tuple[bytes, ...]:
    """A leaf's STREAM of ``dialect`` as the collector subscribes: the initial set, the sync
    response, then ``intervals`` samples of every subscription, serialized."""
    scenario = parse_scenario(LAB)
    wiring = build_wiring(scenario.topology())
    layout = published_layout(scenario, wiring, SimOptions().buffers)
    leaf = next(p.switch for p in plan_agents(scenario)
                if p.role == "leaf" and p.profile == dialect)
    model = SwitchModel(leaf, dialect, wiring, layout, T0)
    profile = profile_of(dialect)
    plans = [SubscriptionPlan(model, r.subscribe, 1.0)
             for r in subscribe_requests(profile, 1.0, profile.encoding)]
    rng = np.random.default_rng(7)
    snap = rng.uniform(0, 1e9, layout.size)
    out: list[bytes] = []
    for i in range(intervals + 1):
        ts = T0 + i * 1_000_000_000
        out += [sub.sel.full(snap, ts).SerializeToString() for plan in plans
                for sub in plan.subs]
        if i == 0:
            out.append(pb.SubscribeResponse(sync_response=True).SerializeToString())
        snap = snap + rng.uniform(0, 1e6, layout.size)
    return tuple(out)


@cache
def profile_of(profile: str) -> GnmiProfile:
    loaded = load_profile(profile)
    assert isinstance(loaded, GnmiProfile)
    return loaded


def pair(profile: str) -> tuple[GnmiDecoder, GnmiDecoder]:
    """A scanning decoder and the protobuf-only reference, each with a mapper of its own."""
    out = []
    for scan in (True, False):
        health = TargetHealth("sw1", "gnmi", "x:1", profile, 1.0, DeviceClock())
        out.append(GnmiDecoder("sw1", PathMapper(profile_of(profile)), health,
                               ErrorTally("wire"), scan=scan))
    return out[0], out[1]


def state(dec: GnmiDecoder) -> tuple[Any, ...]:
    batch = dec.take()
    h = dec.health
    return (None if batch is None else encode_batch(batch), batch and batch.ports, dict(h.errors),
            h.samples_total, h.expected, h.synced, h.deletes_total, dec.repeats_dropped)


def same(messages: list[bytes] | tuple[bytes, ...], profile: str, *, initial: bool = False,
         every: int = 1) -> GnmiDecoder:
    """Feed both decoders; their batches and counts agree every ``every`` messages."""
    fast, ref = pair(profile)
    for i, data in enumerate(messages):
        got = [dec.feed(data, float(i), initial) for dec in (fast, ref)]
        assert got[0] == got[1]
        if i % every == every - 1:
            assert state(fast) == state(ref), i
    assert state(fast) == state(ref)
    return fast


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialects_stream_scans_to_the_same_batches(dialect: str) -> None:
    stream = lab_stream(dialect)
    fast = same(stream, dialect, every=3)
    # after the first interval every SAMPLE subscription's message scans (SONiC's JSON maps too);
    # status values (enums) take the protobuf path
    assert fast.scanned >= 2 * 4


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_reconnected_streams_initial_set_is_judged_the_same(dialect: str) -> None:
    stream = lab_stream(dialect)
    fast, ref = pair(dialect)
    for dec in (fast, ref):
        for i, data in enumerate(stream):
            dec.feed(data, float(i))
        dec.begin_session()
        for i, data in enumerate(stream):  # the initial set again, a fraction after the last
            dec.feed(data, float(i), initial=True)
    assert state(fast) == state(ref)
    assert fast.repeats_dropped == ref.repeats_dropped


def oc(values: list[tuple[str, pb.TypedValue]], ts: int = T0) -> bytes:
    return notification(ts, values)


COUNTER = "/interfaces/interface[name=Ethernet3]/state/counters/in-octets"
STATUS = "/interfaces/interface[name=Ethernet3]/state/oper-status"
IGNORED = "/interfaces/interface[name=Ethernet3]/state/counters/in-unicast-pkts"


def j(raw: bytes) -> pb.TypedValue:
    return pb.TypedValue(json_ietf_val=raw)


EDGES = [
    j(b'"123"'), j(b"123"), j(b'"-5"'), j(b'"-0"'), j(b'"007"'), j(b'"1_000"'), j(b'" 12"'),
    j(b'"+3"'), j(b'"12x'), j(b'"'), j(b'""'), j(b""), j(b'"9223372036854775807"'),
    j(b'"9223372036854775808"'), j(b'"18446744073709551615"'), j(b'"99999999999999999999"'),
    j(b'"0000000000000000000001"'), j(b'"-9223372036854775807"'), j(b'"1.5"'), j(b"nan"),
    pb.TypedValue(uint_val=0), pb.TypedValue(uint_val=2**53 + 1), pb.TypedValue(uint_val=2**63),
    pb.TypedValue(uint_val=2**64 - 1), pb.TypedValue(int_val=-4), pb.TypedValue(string_val="UP"),
    pb.TypedValue(double_val=2.5), pb.TypedValue(bool_val=True), pb.TypedValue(),
    pb.TypedValue(decimal_val=pb.Decimal64(digits=15, precision=1)),
]


@pytest.mark.parametrize("value", EDGES, ids=lambda v: str(v).strip().replace("\n", " "))
@pytest.mark.parametrize("path", [COUNTER, STATUS, IGNORED])
def test_edge_values_read_as_protobuf_reads_them(value: pb.TypedValue, path: str) -> None:
    msg = oc([(COUNTER, pb.TypedValue(uint_val=1)), (path, value)])
    same([msg, msg, msg], "openconfig")


@pytest.mark.parametrize("ts", [0, -1, -(2**63), 1, 2**63 - 1])
def test_any_timestamp_is_read_as_protobuf_reads_it(ts: int) -> None:
    msg = oc([(COUNTER, j(b'"5"'))], ts)
    same([msg, msg], "openconfig")


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def raw(*fields: tuple[int, int, bytes]) -> bytes:
    """A message from ``(field number, wire type, payload)``: length-delimited payloads get their
    length, the others are written as given (a varint or fixed bytes)."""
    return b"".join(varint((number << 3) | kind) + (varint(len(payload)) if kind == 2 else b"")
                    + payload for number, kind, payload in fields)


def test_unusual_wire_forms_give_what_protobuf_gives() -> None:
    good = oc([(COUNTER, j(b'"5"'))])
    note = pb.SubscribeResponse.FromString(good).update
    prefix = note.prefix.SerializeToString()
    path = note.update[0].path.SerializeToString()
    val = note.update[0].val.SerializeToString()
    upd = raw((1, 2, path), (3, 2, val))
    ts = raw((1, 0, b"\x05"))

    def resp(*notification: bytes) -> bytes:
        return raw((1, 2, b"".join(notification)))

    odd = [
        resp(ts, raw((2, 2, prefix)), raw((4, 2, upd))),                   # the good one
        resp(raw((4, 2, upd)), ts, raw((2, 2, prefix))),                   # fields reordered
        resp(ts, ts, raw((2, 2, prefix)), raw((4, 2, upd))),               # timestamp twice
        resp(ts, raw((2, 2, prefix)), raw((2, 2, prefix)), raw((4, 2, upd))),  # prefix twice
        resp(ts, raw((4, 2, upd))),                                        # no prefix
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((1, 2, path), (3, 2, val), (3, 2, val))))),
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((3, 2, val), (1, 2, path))))),
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((1, 2, path))))),     # no value
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((3, 2, val))))),      # no path
        resp(ts, raw((2, 2, prefix)), raw((4, 2, upd + raw((4, 0, b"\x02"))))),  # duplicates
        resp(ts, raw((2, 2, prefix)), raw((4, 2, upd)), raw((5, 2, path))),  # a delete
        resp(ts, raw((2, 2, prefix)), raw((4, 2, upd)), raw((6, 0, b"\x01"))),  # atomic
        resp(ts, raw((2, 2, prefix)), raw((4, 2, upd)), raw((99, 0, b"\x01"))),  # unknown
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((1, 2, path), (3, 2, raw(
            (11, 2, b'"5"'), (3, 0, b"\x07"))))))),                         # two values: last wins
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((1, 2, path), (3, 2, raw(
            (1, 2, b"\xff\xfe"))))))),                                      # a string not UTF-8
        resp(ts, raw((2, 2, prefix)), raw((4, 2, raw((1, 2, path), (3, 2, raw(
            (3, 2, b"\x07"))))))),                                          # a wire type mismatch
        resp(raw((1, 0, b"\xff" * 9 + b"\x01")), raw((2, 2, prefix)), raw((4, 2, upd))),
        resp(raw((1, 0, b"\xff" * 9 + b"\x7f")), raw((2, 2, prefix)), raw((4, 2, upd))),
        resp(raw((1, 0, b"\xff" * 10 + b"\x01")), raw((2, 2, prefix)), raw((4, 2, upd))),
        good + raw((3, 0, b"\x01")),                                       # and a sync_response
        good + good,                                                       # two notifications
        good + raw((5, 2, b"")),                                           # an extension
        good[:-1], good[:1], b"", b"\x0a", b"\x0a\x80", good + b"\x00",
        pb.SubscribeResponse(sync_response=True).SerializeToString(),
        pb.SubscribeResponse(error=pb.Error(message="no")).SerializeToString(),
    ]
    for msg in odd:
        same([good, msg, good, msg], "openconfig")


@given(st.sampled_from(DIALECTS), st.data())
@FUZZ
def test_mutated_lab_messages_scan_as_protobuf_reads_them(dialect: str, data: st.DataObject
                                                          ) -> None:
    stream = lab_stream(dialect, 1)
    good = data.draw(st.sampled_from([m for m in stream if len(m) > 8]))
    bad = bytearray(good)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(bad) - 1))
        how = data.draw(st.sampled_from(("flip", "cut", "insert", "delete")))
        if how == "flip":
            bad[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "cut":
            del bad[at:]
        elif how == "insert":
            bad[at:at] = data.draw(st.binary(min_size=1, max_size=3))
        elif len(bad) > 1:
            del bad[at]
        if not bad:
            break
    same([good, bytes(bad), good, bytes(bad)], dialect, every=2)


@given(st.sampled_from(("openconfig", "sonic", "arista", "cumulus")),
       st.lists(responses(), min_size=1, max_size=4), st.booleans())
@FUZZ
def test_any_subscribe_response_twice_scans_as_protobuf_reads_it(
        profile: str, messages: list[bytes], initial: bool) -> None:
    same([m for m in messages for _ in range(2)], profile, initial=initial)


def test_json_maps_are_expanded_the_same_after_the_keys_are_learned() -> None:
    maps = oc([("/interfaces/interface[name=Ethernet1]/state/counters",
                j(json.dumps({"in-octets": "10", "out-octets": "20"}).encode()))])
    same([maps] * 3, "arista")


def sonic(raw: bytes) -> bytes:
    return notification(T0, [("/COUNTERS/Ethernet*", j(raw))], origin="", target="COUNTERS_DB")


PORT = b'"SAI_PORT_STAT_IF_IN_OCTETS": "%s", "SAI_PORT_STAT_IF_OUT_OCTETS": "2"'
MAPS = [
    b'{"Ethernet1": {' + PORT % b"1" + b'}, "Ethernet2": {' + PORT % b"3" + b'}}',
    b'{"Ethernet1":{' + PORT % b"1" + b'}}',                       # no spaces
    b' {"Ethernet1": {' + PORT % b"1" + b'}} ',                    # around it
    b'{"Ethernet1": {' + PORT % b"1" + b'}}\n\t',
    b'{"Ethernet1": {' + PORT % b"1" + b'}, "Ethernet1": {' + PORT % b"5" + b'}}',  # port twice
    b'{"Ethernet1": {' + PORT % b"1" + b', "SAI_PORT_STAT_IF_IN_OCTETS": "9"}}',  # field twice
    b'{"Ethernet1": {' + PORT % b"-5" + b'}}', b'{"Ethernet1": {' + PORT % b"007" + b'}}',
    b'{"Ethernet1": {' + PORT % b"" + b'}}', b'{"Ethernet1": {' + PORT % b"1.5" + b'}}',
    b'{"Ethernet1": {' + PORT % b" 1" + b'}}', b'{"Ethernet1": {' + PORT % b"\\u0031" + b'}}',
    b'{"Ethernet1": {' + PORT % b"\xd9\xa1" + b'}}',
    b'{"Ethernet1": {"SAI_PORT_STAT_IF_IN_OCTETS": 1}}',           # a number, not a string
    b'{"Ethernet1": {"SAI_PORT_STAT_IF_IN_OCTETS": null}}',
    b'{"Ethernet1": {"SAI_PORT_STAT_IF_IN_OCTETS": ["1"]}}',
    b'{"Ethernet1": {"SAI_PORT_STAT_IF_IN_OCTETS": {"x": "1"}}}',  # an object where a leaf was
    b'{"Ethernet1": "1"}',                                          # a leaf where an object was
    b'{"Ethernet1": {}}', b'{}', b'{"Ethernet1": {"SAI_UNKNOWN_STAT": "4"}}',
    b'{"Ethernet1": {"SAI_PORT_STAT_IF_IN_OCTETS": "1", "x": {"y": {"z": "2"}}}}',
    b'{"Ethernet1": {' + PORT % b"1" + b'}', b'{"Ethernet1": {' + PORT % b"1" + b'}}}',
    b'{"Ethernet1": {' + PORT % b"1" + b',}}', b'{"Ethernet1" {' + PORT % b"1" + b'}}',
    b'{"Ether\\u006eet1": {' + PORT % b"1" + b'}}', b'{"Ethernet1": {' + PORT % b"1" + b'}} x',
]


@pytest.mark.parametrize("raw", MAPS)
def test_sonic_maps_scan_as_json_reads_them(raw: bytes) -> None:
    first = sonic(MAPS[0])
    same([first, sonic(raw), first, sonic(raw), sonic(raw)], "sonic")


def test_a_sonic_map_scans_once_its_names_are_known() -> None:
    fast = same([sonic(MAPS[0])] * 3, "sonic")
    assert fast.scanned == 2
