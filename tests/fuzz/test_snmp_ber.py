"""Property-based tests of the SNMP BER reader (``collectors/snmp/ber.py``): whatever bytes an
agent answers, the reader raises nothing but :class:`~pipeline.errors.DecodeError`; a Response
it is given decodes to exactly the varbinds it holds (encoded here the long way, by pysnmp's own
BER encoder); and an OID's bytes decode to its sub-identifiers."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from collectors.snmp import ber
from pipeline.errors import DecodeError
from tests.fuzz.budget import FUZZ

oids = st.builds(lambda first, second, rest: (first, second, *rest), st.integers(0, 2),
                 st.integers(0, 39), st.lists(st.integers(0, 2**32 - 1), max_size=12))
#: (tag, value) pairs of every type a Response carries
values = st.one_of(
    st.tuples(st.just(ber.INTEGER), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.sampled_from((ber.COUNTER32, ber.GAUGE32, ber.TIMETICKS)),
              st.integers(0, 2**32 - 1)),
    st.tuples(st.just(ber.COUNTER64), st.integers(0, 2**64 - 1)),
    st.tuples(st.just(ber.OCTET_STRING), st.binary(max_size=300)),
    st.tuples(st.just(ber.IP_ADDRESS), st.binary(min_size=4, max_size=4)),
    st.tuples(st.just(ber.OBJECT_IDENTIFIER), oids),
    st.tuples(st.sampled_from((ber.NULL, ber.NO_SUCH_OBJECT, ber.NO_SUCH_INSTANCE,
                               ber.END_OF_MIB_VIEW)), st.none()),
)


def pysnmp_value(tag: int, value: Any) -> Any:
    from pyasn1.type import univ
    from pysnmp.proto import rfc1902, rfc1905

    kinds: dict[int, Any] = {
        ber.INTEGER: rfc1902.Integer32, ber.COUNTER32: rfc1902.Counter32,
        ber.GAUGE32: rfc1902.Gauge32, ber.TIMETICKS: rfc1902.TimeTicks,
        ber.COUNTER64: rfc1902.Counter64, ber.OCTET_STRING: rfc1902.OctetString,
        ber.IP_ADDRESS: rfc1902.IpAddress, ber.OBJECT_IDENTIFIER: rfc1902.ObjectName}
    if tag == ber.NULL:
        return univ.Null("")
    if tag == ber.NO_SUCH_OBJECT:
        return rfc1905.noSuchObject
    if tag == ber.NO_SUCH_INSTANCE:
        return rfc1905.noSuchInstance
    if tag == ber.END_OF_MIB_VIEW:
        return rfc1905.endOfMibView
    return kinds[tag](value)


def response(request_id: int, varbinds: list[tuple[tuple[int, ...], int, Any]],
             community: bytes) -> bytes:
    """An SNMPv2c Response message, BER-encoded by pysnmp."""
    from pyasn1.codec.ber import encoder
    from pysnmp.proto import api

    p = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]
    pdu = p.ResponsePDU()
    p.apiPDU.set_defaults(pdu)
    p.apiPDU.set_request_id(pdu, request_id)
    p.apiPDU.set_varbinds(pdu, [(oid, pysnmp_value(tag, v)) for oid, tag, v in varbinds])
    msg = p.Message()
    p.apiMessage.set_defaults(msg)
    p.apiMessage.set_community(msg, community)
    p.apiMessage.set_pdu(msg, pdu)
    return bytes(encoder.encode(msg))


def expected(tag: int, value: Any) -> Any:
    if tag == ber.OBJECT_IDENTIFIER:
        return ber.encode_oid(value)
    return value


@FUZZ
@given(st.integers(-(2**31), 2**31 - 1), st.lists(st.tuples(oids, values), max_size=12),
       st.binary(max_size=40))
def test_a_response_decodes_to_exactly_its_varbinds(request_id: int,
                                                     varbinds: list[Any],
                                                     community: bytes) -> None:
    binds = [(oid, tag, value) for oid, (tag, value) in varbinds]
    data = response(request_id, binds, community)
    rid, status, index, got = ber.decode_response(data)
    assert (rid, status, index) == (request_id, 0, 0)
    assert got == [(ber.encode_oid(oid), tag, expected(tag, value)) for oid, tag, value in binds]
    for (oid, _, _), (raw, _, _) in zip(binds, got, strict=True):
        assert ber.decode_oid(raw) == oid


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_our_error(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        ber.decode_response(data)


@FUZZ
@given(st.lists(st.tuples(oids, values), min_size=1, max_size=6), st.data())
def test_a_damaged_response_is_refused_or_read_within_its_bytes(varbinds: list[Any],
                                                                data: st.DataObject) -> None:
    raw = bytearray(response(7, [(o, t, v) for o, (t, v) in varbinds], b"public"))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(raw)))
    for damaged in (bytes(raw), bytes(raw[:cut])):
        try:
            _, _, _, got = ber.decode_response(damaged)
        except DecodeError:
            continue
        # every name and string read is whole: the message holds it with the length it claims
        for oid, tag, value in got:
            assert tlv(ber.OBJECT_IDENTIFIER, oid) in damaged
            if isinstance(value, bytes):
                assert tlv(tag, value) in damaged


def tlv(tag: int, content: bytes) -> bytes:
    """A BER tag-length-value with the shortest length form (what pysnmp writes)."""
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


@FUZZ
@given(oids)
def test_an_oid_round_trips(oid: tuple[int, ...]) -> None:
    assume(not (oid[0] < 2 and oid[1] >= 40))
    assert ber.decode_oid(ber.encode_oid(oid)) == oid
    assert ber.oid_bytes(".".join(map(str, oid))) == ber.encode_oid(oid)


@FUZZ
@given(st.binary(max_size=40))
def test_random_oid_bytes_raise_only_our_error(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        ber.decode_oid(data)
