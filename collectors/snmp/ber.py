"""Just enough BER to read SNMP responses fast, and to name OIDs by their encoded bytes.

pyasn1's generic decoder tops out near 16,000 varbinds/s on one core (measured: a 100-varbind
GetResponse decodes in about 6 ms), below what one collector must sustain. An SNMPv2c
Response-PDU has a fixed shape (RFC 3416), so :func:`decode_response` walks it directly and hands
back each varbind as ``(oid, tag, value)``: ``oid`` is the OID's encoded content bytes, ``value``
an ``int`` for the numeric types, ``bytes`` for strings and OIDs, ``None`` for NULL and the
exception values. Requests are still built by pysnmp.

OIDs stay as encoded bytes on the hot path: sub-identifiers are self-delimiting in BER, so an OID
lies in a subtree exactly when its bytes start with the subtree's bytes, and the bytes after the
column's prefix are the row index (decoded once, then cached).
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.errors import DecodeError

INTEGER = 0x02
OCTET_STRING = 0x04
NULL = 0x05
OBJECT_IDENTIFIER = 0x06
IP_ADDRESS = 0x40
COUNTER32 = 0x41
GAUGE32 = 0x42
TIMETICKS = 0x43
OPAQUE = 0x44
COUNTER64 = 0x46
NO_SUCH_OBJECT = 0x80
NO_SUCH_INSTANCE = 0x81
END_OF_MIB_VIEW = 0x82
RESPONSE_PDU = 0xA2

UNSIGNED = frozenset({COUNTER32, GAUGE32, TIMETICKS, COUNTER64})
NUMERIC = UNSIGNED | {INTEGER}

Varbind = tuple[bytes, int, "int | bytes | None"]


def _length(buf: bytes, i: int) -> tuple[int, int]:
    """(length, offset of the contents) of the TLV whose length octets start at ``i``."""
    first = buf[i]
    if first < 0x80:
        return first, i + 1
    n = first & 0x7F
    if n == 0 or n > 4:
        raise DecodeError(f"BER length form {first:#x} at offset {i} is not supported")
    return int.from_bytes(buf[i + 1:i + 1 + n], "big"), i + 1 + n


def _integer(buf: bytes, i: int) -> tuple[int, int]:
    if buf[i] != INTEGER:
        raise DecodeError(f"expected INTEGER at offset {i}, found tag {buf[i]:#x}")
    length, start = _length(buf, i + 1)
    return int.from_bytes(buf[start:start + length], "big", signed=True), start + length


def decode_response(buf: bytes) -> tuple[int, int, int, list[Varbind]]:
    """``(request_id, error_status, error_index, varbinds)`` of an SNMPv2c Response message."""
    try:
        if buf[0] != 0x30:
            raise DecodeError("an SNMP message is a SEQUENCE")
        length, i = _length(buf, 1)
        if i + length > len(buf):
            raise DecodeError("message shorter than its length")
        version, i = _integer(buf, i)
        if version != 1:
            raise DecodeError(f"not an SNMPv2c message (version {version})")
        if buf[i] != OCTET_STRING:
            raise DecodeError("community is not an OCTET STRING")
        length, i = _length(buf, i + 1)
        i += length
        if buf[i] != RESPONSE_PDU:
            raise DecodeError(f"not a Response-PDU (tag {buf[i]:#x})")
        _, i = _length(buf, i + 1)
        request_id, i = _integer(buf, i)
        error_status, i = _integer(buf, i)
        error_index, i = _integer(buf, i)
        if buf[i] != 0x30:
            raise DecodeError("varbind list is not a SEQUENCE")
        length, i = _length(buf, i + 1)
        return request_id, error_status, error_index, _varbinds(buf, i, i + length)
    except IndexError:
        raise DecodeError("truncated SNMP message") from None


def _varbinds(buf: bytes, i: int, end: int) -> list[Varbind]:
    out: list[Varbind] = []
    append = out.append
    frombytes = int.from_bytes
    if end > len(buf):
        raise DecodeError("varbind list runs past the end of the message")
    while i < end:
        # SEQUENCE { name OBJECT IDENTIFIER, value }; short lengths are the common case
        if buf[i] != 0x30:
            raise DecodeError(f"varbind at offset {i} is not a SEQUENCE")
        n = buf[i + 1]
        if n < 0x80:
            i, stop = i + 2, i + 2 + n
        else:
            n, i = _length(buf, i + 1)
            stop = i + n
        if buf[i] != OBJECT_IDENTIFIER:
            raise DecodeError(f"varbind name at offset {i} is not an OBJECT IDENTIFIER")
        n = buf[i + 1]
        if n < 0x80:
            oid = buf[i + 2:i + 2 + n]
            i += 2 + n
        else:
            n, j = _length(buf, i + 1)
            oid = buf[j:j + n]
            i = j + n
        tag = buf[i]
        n = buf[i + 1]
        if n < 0x80:
            raw = buf[i + 2:i + 2 + n]
            i += 2 + n
        else:
            n, j = _length(buf, i + 1)
            raw = buf[j:j + n]
            i = j + n
        if i != stop:
            raise DecodeError(f"varbind ending at offset {i} does not fill its SEQUENCE")
        if tag in UNSIGNED:
            append((oid, tag, frombytes(raw, "big")))
        elif tag == INTEGER:
            append((oid, tag, frombytes(raw, "big", signed=True)))
        elif tag >= NO_SUCH_OBJECT or tag == NULL:
            append((oid, tag, None))
        else:
            append((oid, tag, raw))
    if i != end:
        raise DecodeError("varbind list overruns its length")
    return out


def encode_oid(parts: Iterable[int]) -> bytes:
    """The content bytes of an OBJECT IDENTIFIER (``1.3.6.1`` → ``b"\\x2b\\x06\\x01"``)."""
    parts = list(parts)
    if len(parts) < 2:
        raise ValueError("an OID has at least two sub-identifiers")
    out = bytearray()
    for k, sub in enumerate([parts[0] * 40 + parts[1], *parts[2:]]):
        if sub < 0:
            raise ValueError(f"negative sub-identifier in OID at {k}")
        chunk = [sub & 0x7F]
        rest = sub >> 7
        while rest:
            chunk.append(0x80 | (rest & 0x7F))
            rest >>= 7
        out.extend(reversed(chunk))
    return bytes(out)


def oid_bytes(text: str) -> bytes:
    return encode_oid(int(p) for p in text.strip(".").split("."))


def subids(data: bytes) -> tuple[int, ...]:
    """Sub-identifiers of encoded bytes that continue an OID (a row index: no first-byte rule)."""
    out = []
    value = 0
    for byte in data:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            out.append(value)
            value = 0
    if data and data[-1] >= 0x80:
        raise DecodeError("OID ends inside a sub-identifier")
    return tuple(out)


def decode_oid(data: bytes) -> tuple[int, ...]:
    """All sub-identifiers of an OID's content bytes."""
    parts = subids(data)
    if not parts:
        raise DecodeError("empty OID")
    first = parts[0]
    head = (min(first // 40, 2), first - 40 * min(first // 40, 2))
    return (*head, *parts[1:])
