"""The protobuf wire format as the compiled scan reads it, and the table of keys it looks up.

:mod:`collectors.gnmi.scan` reads a steady stream's SubscribeResponses without protobuf; this
module holds what it stands on: varints, fields and RFC 7951 decimal integers read from a byte
array (numba, bounds checked by hand: a length past its end or a varint over ten bytes is
malformed), and :class:`WireKeys`, an open-addressing table of the exact wire bytes of every
prefix, path and JSON member name seen before, each mapped to what
:class:`~collectors.gnmi.decode.GnmiDecoder` resolved for it. A key is learnt only from a message
protobuf parsed (:meth:`WireKeys.learn`), so bytes equal to a key are known to parse as it did.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from collectors.gnmi.mapping import IGNORED, PathMapper

#: no entry for the key
ABSENT = -1
#: the namespace of prefix keys (a path's namespace is its prefix's entry, a JSON member's its
#: parent's)
PREFIX_NS = -1
#: table values of JSON members: an object; a leaf the protobuf path must read (an enum, unknown)
OBJECT, SLOW_LEAF = -5, -4
#: what a value is: a number read; well-formed but not a number here; not for the scan
NUMBER, OTHER, BAD = 0, 1, 2
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)
_MIX = np.uint64(0xFF51AFD7ED558CCD)
INT63 = np.uint64(2**63)


@njit(cache=True)
def _hash(buf: Any, start: int, n: int, ns: int) -> Any:  # pragma: no cover
    """FNV-1a over 8-byte words (then the bytes left), with a final mix so the low bits (the
    slot) depend on every byte."""
    h = _FNV_OFFSET ^ np.uint64(ns + 7)
    i, end = start, start + n
    while i + 8 <= end:
        w = np.uint64(0)
        for k in range(8):
            w |= np.uint64(buf[i + k]) << np.uint64(8 * k)
        h = (h ^ w) * _FNV_PRIME
        i += 8
    while i < end:
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
        i += 1
    h ^= h >> np.uint64(33)
    h *= _MIX
    return h ^ (h >> np.uint64(33))


@njit(cache=True)
def varint(buf: Any, pos: int, end: int) -> tuple[Any, int]:  # pragma: no cover
    """``(value, position after)``; position -1 when it runs past ``end`` or over 64 bits."""
    result = np.uint64(0)
    shift = 0
    while pos < end and shift < 64:
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            return result, -1
        result |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            return result, pos
        shift += 7
    return result, -1


@njit(cache=True)
def field(buf: Any, pos: int, end: int) -> tuple[Any, Any, Any, Any]:  # pragma: no cover
    """One field: ``(number, wire type, start of its payload, its end)``; number -1 when it
    is malformed. A varint's payload is the varint itself."""
    tag, pos = varint(buf, pos, end)
    if pos < 0 or tag > np.uint64(0xFFFFFFFF):
        return -1, 0, 0, 0
    number, kind = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
    if kind == 0:
        _, after = varint(buf, pos, end)
        return (number if after >= 0 else -1), kind, pos, after
    if kind == 2:
        length, start = varint(buf, pos, end)
        if start < 0 or length > np.uint64(end - start):
            return -1, 0, 0, 0
        return number, kind, start, start + np.int64(length)
    if kind in (1, 5):
        size = 8 if kind == 1 else 4
        return (number if pos + size <= end else -1), kind, pos, pos + size
    return -1, 0, 0, 0


@njit(cache=True)
def integer(buf: Any, start: int, end: int) -> tuple[int, float]:  # pragma: no cover
    """A decimal integer as ``int()`` reads the decoder's common case: ``-`` and at most 19
    ASCII digits, below 2**63 (anything else: :data:`OTHER`, for protobuf and Python)."""
    negative = start < end and buf[start] == 45  # '-'
    if negative:
        start += 1
    if end <= start or end - start > 19:
        return OTHER, 0.0
    x = np.uint64(0)
    for i in range(start, end):
        d = buf[i] - 48
        if d < 0 or d > 9:
            return OTHER, 0.0
        x = x * np.uint64(10) + np.uint64(d)
    if x >= INT63:
        return OTHER, 0.0
    signed = np.int64(x)
    return NUMBER, float(-signed if negative else signed)


@njit(cache=True)
def same(buf: Any, start: int, n: int, arena: Any, at: int) -> bool:  # pragma: no cover
    """``buf[start:start+n]`` equals ``arena[at:at+n]``."""
    for k in range(n):  # noqa: SIM110 - numba compiles the loop, not a generator
        if arena[at + k] != buf[start + k]:
            return False
    return True


@njit(cache=True)
def find(buf: Any, start: int, n: int, ns: int, arena: Any, slots: Any, e_start: Any,
         e_len: Any, e_ns: Any, e_val: Any) -> Any:  # pragma: no cover
    """The entry of key ``buf[start:start+n]`` in namespace ``ns``, or :data:`ABSENT`."""
    mask = slots.shape[0] - 1
    i = np.int64(_hash(buf, start, n, ns) & np.uint64(mask))
    while True:
        e = slots[i] - 1
        if e < 0:
            return ABSENT
        if e_ns[e] == ns and e_len[e] == n and same(buf, start, n, arena, e_start[e]):
            return e
        i = (i + 1) & mask


class WireKeys:
    """Wire bytes of prefixes, paths and JSON member names → entry, for the compiled scan.

    One per :class:`~collectors.gnmi.mapping.PathMapper` (:func:`keys_for`: the same dialect
    sends the same bytes to every decoder of it). :attr:`arrays` is what a scan reads: ``(arena,
    slots, entry start, length, namespace, value, seen, next, generation)``; it is replaced whole
    when it grows, and an entry is written before the slot that points at it, so a scan always
    sees a table that holds together. ``seen``, ``next`` and ``generation`` are the scan's own:
    a JSON member twice in one object; the entry (+1) that followed this one last time (a steady
    stream sends its paths in the same order, so the scan checks that one's bytes before it
    hashes)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.used = 0
        self.count = 0
        self._lock = threading.Lock()
        self.arrays: tuple[Any, ...] = (
            np.zeros(64 * capacity, np.uint8), np.zeros(2 * capacity, np.int32),
            *(np.zeros(capacity, np.int64) for _ in range(6)), np.zeros(1, np.int64))

    def add(self, key: bytes, ns: int, value: int) -> int:
        """The entry of ``key`` in ``ns`` (added with ``value`` if new)."""
        buf = np.frombuffer(key, dtype=np.uint8)
        with self._lock:
            found = int(find(buf, 0, len(key), ns, *self.arrays[:6]))
            if found != ABSENT:
                return found
            if 2 * (self.count + 1) > self.arrays[1].shape[0] or \
                    self.used + len(key) > self.arrays[0].shape[0]:
                self._grow(len(key))
            arena, slots, e_start, e_len, e_ns, e_val = self.arrays[:6]
            e = self.count
            arena[self.used:self.used + len(key)] = buf
            e_start[e], e_len[e], e_ns[e], e_val[e] = self.used, len(key), ns, value
            self.used += len(key)
            self.count += 1
            _place(slots, arena, e_start, e_len, e_ns, e)
            return e

    def _grow(self, key_len: int) -> None:
        arena, _, *entries, gen = self.arrays
        size = 2 * entries[0].shape[0]
        grown = []
        for old in entries:
            new = np.zeros(size, dtype=old.dtype)
            new[:old.shape[0]] = old
            grown.append(new)
        new_arena = np.zeros(2 * arena.shape[0] + key_len, np.uint8)
        new_arena[:arena.shape[0]] = arena
        slots = np.zeros(2 * size, np.int32)
        for e in range(self.count):
            _place(slots, new_arena, grown[0], grown[1], grown[2], e)
        self.arrays = (new_arena, slots, *grown, gen)

    def learn(self, data: bytes, prefix_span: tuple[int, int], spans: NDArray[np.int64],
              updates: Any, table: dict[Any, int] | None, plain: list[bool]) -> None:
        """Teach the keys of a message protobuf parsed: its prefix's and each update's wire
        bytes (and the member names of a JSON map value) → what the decoder's cache ``table``
        (of that prefix) holds for them; ``plain``: per spec, a number without an enum."""
        if table is None:
            return
        p0, pn = prefix_span
        prefix = self.add(data[p0:p0 + pn], PREFIX_NS, 0)
        for i, u in enumerate(updates):
            key = u.path.SerializeToString()
            sid = table.get(key)
            if sid is None:
                continue
            s, e = int(spans[i, 0]), int(spans[i, 1])
            entry = self.add(data[s:e], prefix, sid)
            kind = u.val.WhichOneof("value")
            if sid != IGNORED and kind in ("json_ietf_val", "json_val"):
                try:
                    obj = json.loads(getattr(u.val, kind))
                except (ValueError, RecursionError):
                    continue
                if type(obj) is dict:
                    self._learn_map(obj, entry, key, table, plain)

    def _learn_map(self, obj: dict[str, Any], entry: int, key: bytes, table: dict[Any, int],
                   plain: list[bool]) -> None:
        stack: list[tuple[int, tuple[str, ...], dict[str, Any]]] = [(entry, (), obj)]
        while stack:
            ns, names, node = stack.pop()
            for name, value in node.items():
                if not name.isascii() or not name.isprintable() or '"' in name or "\\" in name:
                    continue  # the scan reads only plain names
                leaf = (*names, name)
                if type(value) is dict:
                    stack.append((self.add(name.encode(), ns, OBJECT), leaf, value))
                    continue
                sid = table.get((key, *leaf))
                if sid is not None:
                    self.add(name.encode(), ns, sid if sid >= 0 and plain[sid] else
                             IGNORED if sid == IGNORED else SLOW_LEAF)

def _place(slots: NDArray[np.int32], arena: NDArray[np.uint8], e_start: NDArray[np.int64],
           e_len: NDArray[np.int64], e_ns: NDArray[np.int64], e: int) -> None:
    mask = slots.shape[0] - 1
    i = int(_hash(arena, int(e_start[e]), int(e_len[e]), int(e_ns[e]))) & mask
    while slots[i]:
        i = (i + 1) & mask
    slots[i] = e + 1


_TABLES: weakref.WeakKeyDictionary[PathMapper, WireKeys] = weakref.WeakKeyDictionary()


def keys_for(mapper: PathMapper) -> WireKeys:
    """The wire keys of a mapper's decoders."""
    keys = _TABLES.get(mapper)
    if keys is None:
        keys = _TABLES.setdefault(mapper, WireKeys())
    return keys
