"""Our BER reader against pyasn1's encoder (the reference), and the DateAndTime clock."""

from __future__ import annotations

import asyncio
import calendar
from typing import Any

import pytest
from pyasn1.codec.ber import encoder
from pysnmp.proto import api, rfc1902, rfc1905

from collectors.snmp.ber import (
    COUNTER32,
    COUNTER64,
    END_OF_MIB_VIEW,
    INTEGER,
    NO_SUCH_INSTANCE,
    OCTET_STRING,
    decode_oid,
    decode_response,
    encode_oid,
    oid_bytes,
    subids,
)
from collectors.snmp.poll import SnmpClock, parse_date_and_time
from collectors.snmp.walk import walk_columns
from pipeline.errors import DecodeError

V2C = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]


def response(varbinds: list[tuple[tuple[int, ...], object]], request_id: int = 77,
             status: int = 0) -> bytes:
    pdu = V2C.ResponsePDU()
    V2C.apiPDU.set_defaults(pdu)
    V2C.apiPDU.set_request_id(pdu, request_id)
    V2C.apiPDU.set_error_status(pdu, status)
    V2C.apiPDU.set_varbinds(pdu, varbinds)
    msg = V2C.Message()
    V2C.apiMessage.set_defaults(msg)
    V2C.apiMessage.set_community(msg, "public")
    V2C.apiMessage.set_pdu(msg, pdu)
    return bytes(encoder.encode(msg))


def test_decodes_what_pyasn1_encodes() -> None:
    big = (1, 3, 6, 1, 4, 1, 9, 9, 580, 1, 5, 5, 1, 4, 100000, 2, 8, 1)
    raw = response([
        ((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6, 1), rfc1902.Counter64(2**64 - 1)),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 14, 2), rfc1902.Counter32(2**32 - 1)),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 8, 3), rfc1902.Integer32(-7)),
        ((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1, 4), rfc1902.OctetString(b"Ethernet4" * 20)),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 14, 4), rfc1905.noSuchInstance),
        (big, rfc1905.endOfMibView),
    ] * 10)
    request_id, status, index, varbinds = decode_response(raw)
    assert (request_id, status, index) == (77, 0, 0)
    assert len(varbinds) == 60
    first = varbinds[:6]
    assert [(decode_oid(o), t, v) for o, t, v in first] == [
        ((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6, 1), COUNTER64, 2**64 - 1),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 14, 2), COUNTER32, 2**32 - 1),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 8, 3), INTEGER, -7),
        ((1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1, 4), OCTET_STRING, b"Ethernet4" * 20),
        ((1, 3, 6, 1, 2, 1, 2, 2, 1, 14, 4), NO_SUCH_INSTANCE, None),
        (big, END_OF_MIB_VIEW, None),
    ]


def test_oid_bytes_are_prefix_exact() -> None:
    column = oid_bytes("1.3.6.1.2.1.31.1.1.1.6")
    assert oid_bytes("1.3.6.1.2.1.31.1.1.1.6.129").startswith(column)
    assert not oid_bytes("1.3.6.1.2.1.31.1.1.1.60.1").startswith(column)
    assert subids(oid_bytes("1.3.6.1.4.1.9.9.813.1.2.1.2.300.7")[len(
        oid_bytes("1.3.6.1.4.1.9.9.813.1.2.1.2")):]) == (300, 7)
    assert encode_oid((1, 3, 6, 1)) == bytes(encoder.encode(rfc1902.ObjectName("1.3.6.1")))[2:]
    assert sorted([oid_bytes("1.3.6.200"), oid_bytes("1.3.6.2.5"), oid_bytes("1.3.6.2")]) == [
        oid_bytes("1.3.6.2"), oid_bytes("1.3.6.2.5"), oid_bytes("1.3.6.200")]


@pytest.mark.parametrize("raw", [b"", b"\x30\x05\x02\x01", b"\x04\x00",
                                 response([((1, 3, 6, 1), rfc1902.Integer32(1))])[:-3]])
def test_broken_messages_are_decode_errors(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_response(raw)


def test_date_and_time_and_the_anchored_clock() -> None:
    utc = calendar.timegm((2026, 11, 30, 10, 0, 0)) * 10**9
    assert parse_date_and_time(bytes([0x07, 0xEA, 11, 30, 10, 0, 0, 5])) == utc + 5 * 10**8
    east = bytes([0x07, 0xEA, 11, 30, 12, 0, 0, 0, ord("+"), 2, 0])  # 12:00 at UTC+2
    assert parse_date_and_time(east) == utc
    with pytest.raises(DecodeError):
        parse_date_and_time(b"\x07\xea\x0d")

    clock = SnmpClock()
    assert clock.update(1000, utc) == (utc, False)
    # a decisecond-resolution date, 10.03 s later: the anchored clock keeps centiseconds
    assert clock.update(2003, utc + 10 * 10**9) == (utc + 10_030_000_000, False)
    # the device's date stepped by a minute (NTP): re-anchored to it
    assert clock.update(2103, utc + 71 * 10**9) == (utc + 71 * 10**9, False)
    # sysUpTime went backwards: a restart
    assert clock.update(50, utc + 72 * 10**9) == (utc + 72 * 10**9, True)
    # sysUpTime wrapping at 2**32 is not a restart
    wrap = SnmpClock()
    wrap.update(2**32 - 100, utc)
    assert wrap.update(100, utc + 2 * 10**9) == (utc + 2 * 10**9, False)


class _Table:
    """An agent answering GETBULK over one table in memory (rows per column, row-major)."""

    def __init__(self, columns: dict[bytes, int]) -> None:
        self.columns = columns
        self.requests: list[tuple[int, int]] = []

    def _after(self, oid: bytes) -> tuple[bytes, int, int | bytes | None] | None:
        every = sorted(col + bytes([row]) for col, n in self.columns.items()
                       for row in range(1, n + 1))
        later = [o for o in every if o > oid]
        return (later[0], COUNTER32, 1) if later else None

    async def get(self, oids: list[bytes]) -> list[Any]:
        raise NotImplementedError

    async def bulk(self, oids: list[bytes], max_repetitions: int) -> list[Any]:
        self.requests.append((len(oids), max_repetitions))
        out: list[Any] = []
        current = list(oids)
        for _ in range(max_repetitions):
            for i, oid in enumerate(current):
                nxt = self._after(oid)
                out.append(nxt or (oid, END_OF_MIB_VIEW, None))
                current[i] = nxt[0] if nxt else oid
        return out


def test_walks_follow_columns_and_trim_repetitions_to_what_they_expect() -> None:
    a, b = oid_bytes("1.3.6.1.9.1"), oid_bytes("1.3.6.1.9.2")
    agent = _Table({a: 30, b: 12})
    first = asyncio.run(walk_columns(agent, [a, b], max_repetitions=10, columns_per_request=2))
    assert [len(first.rows[c]) for c in (a, b)] == [30, 12]
    assert [subids(i) for i, _, _ in first.rows[b]] == [(r,) for r in range(1, 13)]
    agent.requests.clear()
    again = asyncio.run(walk_columns(agent, [a, b], max_repetitions=50, columns_per_request=2,
                                     expected={a: 30, b: 12}))
    assert [len(again.rows[c]) for c in (a, b)] == [30, 12]
    assert agent.requests == [(2, 31)]  # one request, no rows asked for past the ends
    agent.columns[a] = 60  # the table grew: back to full repetitions after the expectation
    grown = asyncio.run(walk_columns(agent, [a], max_repetitions=50, columns_per_request=1,
                                     expected={a: 30}))
    assert len(grown.rows[a]) == 60 and len(agent.requests) <= 4
