"""The wire encoding of a SampleBatch on the bus: compact, versioned, columnar.

Layout of version 2 (all integers little-endian; ``docs/bus-encoding.md`` has the full table)::

    offset  size  field
    0       4     magic  b"RWSB"
    4       1     version (2)
    5       3     reserved, zero
    8       4     n, the number of rows
    12      4     length in bytes of the device vocabulary block
    16      4     length in bytes of the port vocabulary block
    20      ...   device names, UTF-8, separated by NUL
    ...     ...   port names, UTF-8, separated by NUL
    then the columns, each starting on an 8-byte boundary (zero padding before it):
            8n    ts_ns     int64
            4n    device    int32 (code into the device vocabulary)
            4n    port      int32 (code into the port vocabulary)
            2n    metric    uint16 (code into pipeline.metrics.CATALOG)
            2n    qual      int16 (priority or queue, -1 for none)
            8n    value     float64
            1n    flags     uint8 (1: Counter32 source, 2: counters reset before this sample)

A name that holds a NUL (the separator) or a lone surrogate (which UTF-8 cannot hold) travels
with U+FFFD in their place, so no row changes device or port. Version 1 is the same without any
padding (columns right after the vocabularies); it is still
decoded. Decoding copies nothing but the vocabulary: columns are numpy views over the message
bytes, aligned for version 2 (a misaligned view is slower to read).

The rows are the message's items (:mod:`pipeline.wire.items`): bytes that do not hold a batch
(a tombstone, a short or long message, a wrong magic, an unknown version, non-zero padding,
vocabularies that are not UTF-8) raise :class:`~pipeline.errors.DecodeError`; rows whose device or
port code is outside the batch's vocabularies, or whose metric code is outside this consumer's
catalog (a newer producer's metric), are dropped and reported, and the other rows are kept.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from pipeline.errors import DecodeError
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch
from pipeline.wire.items import BadItem, Decoded, present

MAGIC = b"RWSB"
VERSION = 2
#: the versions this decoder reads
VERSIONS = (1, 2)
#: every column of a version 2 message starts at a multiple of this many bytes
ALIGN = 8
_HEADER = struct.Struct("<4sB3xIII")
_COLUMNS: tuple[tuple[str, type[np.generic]], ...] = (
    ("ts_ns", np.int64), ("device", np.int32), ("port", np.int32), ("metric", np.uint16),
    ("qual", np.int16), ("value", np.float64), ("flags", np.uint8),
)
_ROW_BYTES = sum(np.dtype(t).itemsize for _, t in _COLUMNS)
#: bytes each row adds to an encoded batch, and the most fixed bytes besides rows and
#: vocabularies (the header and the padding before each column)
ROW_BYTES = _ROW_BYTES
ENCODING_OVERHEAD = _HEADER.size + (ALIGN - 1) * len(_COLUMNS)
_ZEROS = bytes(ALIGN)
#: what a name cannot hold on the wire: NUL (the vocabulary's separator) and lone surrogates
_UNCARRIED = re.compile("[\0\ud800-\udfff]")


def _pad(offset: int, version: int) -> int:
    """Padding bytes before a column that would start at ``offset``."""
    return -offset % ALIGN if version >= 2 else 0


def _vocab_bytes(names: tuple[str, ...]) -> bytes:
    """The names separated by NUL, in UTF-8. A name that cannot travel so (a NUL inside, a lone
    surrogate from a JSON ``"\\ud800"``) travels with U+FFFD in their place: the others keep
    their codes and no row changes device or port."""
    try:
        data = "\0".join(names).encode()
        if data.count(0) == max(0, len(names) - 1):
            return data
    except UnicodeEncodeError:
        pass
    return "\0".join(_UNCARRIED.sub("\ufffd", n) for n in names).encode()


def _layout(version: int, n: int, dev_len: int, port_len: int) -> tuple[list[int], int]:
    """Where each column starts, and the message's whole length."""
    pos = _HEADER.size + dev_len + port_len
    starts = []
    for _, dtype in _COLUMNS:
        pos += _pad(pos, version)
        starts.append(pos)
        pos += np.dtype(dtype).itemsize * n
    return starts, pos


def encode_batch(batch: SampleBatch) -> bytes:
    """Serialise a batch (the version 2 layout above)."""
    dev = _vocab_bytes(batch.devices)
    port = _vocab_bytes(batch.ports)
    parts = [_HEADER.pack(MAGIC, VERSION, len(batch), len(dev), len(port)), dev, port]
    pos = _HEADER.size + len(dev) + len(port)
    for name, dtype in _COLUMNS:
        pad = _pad(pos, VERSION)
        if pad:
            parts.append(_ZEROS[:pad])
        column = np.ascontiguousarray(getattr(batch, name), dtype=dtype).tobytes()
        parts.append(column)
        pos += pad + len(column)
    return b"".join(parts)


def decode_samples(value: bytes | None) -> Decoded[SampleBatch]:
    """Parse a message written by :func:`encode_batch` (version 1 or 2): the batch of its good
    rows, and the bad ones with their reasons. DecodeError when the bytes hold no batch."""
    data = present(value, "sample batch")
    if len(data) < _HEADER.size:
        raise DecodeError(f"sample batch too short: {len(data)} bytes")
    magic, version, n, dev_len, port_len = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise DecodeError(f"not a sample batch (magic {magic!r})")
    if version not in VERSIONS:
        raise DecodeError(f"sample batch version {version} is not supported "
                          f"(this decoder reads {', '.join(map(str, VERSIONS))})")
    starts, want = _layout(version, n, dev_len, port_len)
    if len(data) != want:
        raise DecodeError(f"sample batch of {n} rows should be {want} bytes, got {len(data)}")
    pos = _HEADER.size
    try:
        devices = tuple(data[pos:pos + dev_len].decode().split("\0")) if dev_len else ()
        pos += dev_len
        ports = tuple(data[pos:pos + port_len].decode().split("\0")) if port_len else ()
        pos += port_len
    except UnicodeDecodeError as exc:
        raise DecodeError(f"sample batch vocabulary is not UTF-8: {exc}") from exc
    if n and port_len == 0:
        ports = ("",)
    cols = {}
    buf = memoryview(data)
    for (name, dtype), start in zip(_COLUMNS, starts, strict=True):
        if any(buf[pos:start]):
            raise DecodeError(f"sample batch padding before {name} is not zero")
        size = np.dtype(dtype).itemsize * n
        cols[name] = np.frombuffer(buf[start:start + size], dtype=dtype)
        pos = start + size
    return _good_rows(SampleBatch(devices=devices, ports=ports, **cols))


def decode_batch(value: bytes | None) -> SampleBatch:
    """The whole batch of a message, or DecodeError if it holds no batch or any bad row (for
    code that holds a message it wrote: tests, tools; consumers of the bus use
    :func:`decode_samples` through :class:`~pipeline.wire.deadletter.DeadLetters`)."""
    return decode_samples(value).whole("sample batch")


def _good_rows(batch: SampleBatch) -> Decoded[SampleBatch]:
    """The rows whose codes point into the vocabularies and the catalog; the others reported, by
    their first fault."""
    checks = ((batch.device, len(batch.devices), "device code {} is outside the batch's {} "
               "device names"),
              (batch.port, len(batch.ports), "port code {} is outside the batch's {} port names"),
              (batch.metric, len(CATALOG), "metric code {} is not in this consumer's catalog of "
               "{} metrics"))
    if not len(batch) or all(int(col.min()) >= 0 and int(col.max()) < limit
                             for col, limit, _ in checks):
        return Decoded(batch)
    dropped = np.zeros(len(batch), dtype=bool)
    bad = []
    for col, limit, reason in checks:
        out = ((col < 0) | (col >= limit)) & ~dropped
        rows = np.flatnonzero(out)
        if len(rows):
            first = int(rows[0])
            bad.append(BadItem(index=first, count=len(rows),
                               reason=reason.format(int(col[first]), limit)))
            dropped |= out
    return Decoded(batch.take(~dropped), tuple(bad))
