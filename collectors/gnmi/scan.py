"""The gNMI hot path's fast lane: a compiled scan of a SubscribeResponse's wire bytes.

A steady stream sends the same paths every interval with plain numbers for values. For such a
message :func:`scan` (numba) walks the protobuf wire format itself — SubscribeResponse →
Notification → Update → Path / TypedValue — looks each update's path bytes up in the mapper's
:class:`~collectors.gnmi.wire.WireKeys` and writes the rows' spec ids and values into the
caller's buffers: no protobuf objects, no ``SerializeToString``, no Python per update. A JSON map
value (SONiC's) is read by :func:`collectors.gnmi.jsonmap.read_map` in the same pass.

It takes only what it can read exactly as :class:`~collectors.gnmi.decode.GnmiDecoder`'s protobuf
path would. A prefix, path or member name it has not seen gives :data:`MISS` (the decoder then
decodes the message with protobuf and teaches the table its keys, so the next interval's message
scans); a value other than an unsigned varint or an RFC 7951 integer (``"123"``) on a mapped path,
an unknown path, and anything unusual on the wire (an unknown or repeated field, a delete, a sync
response or an error, a length past its end, a string that is not ASCII) give :data:`SLOW`: the
protobuf path decodes it, and counts what is bad, as before. Paths are known to parse (their bytes
equal those of a path protobuf parsed) and values are checked here, so a message the scan accepts
is one protobuf accepts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from collectors.gnmi.jsonmap import MAP_MISS, MAP_SLOW, read_map
from collectors.gnmi.mapping import IGNORED
from collectors.gnmi.wire import (
    ABSENT,
    BAD,
    INT63,
    NUMBER,
    OTHER,
    PREFIX_NS,
    WireKeys,
    field,
    find,
    integer,
    same,
    varint,
)

#: what :func:`scan` did: every row written; a key it has not seen; the message needs protobuf
OK, MISS, SLOW = 0, 1, 2
#: a TypedValue that is a JSON object (the other kinds: :mod:`collectors.gnmi.wire`)
_MAP = 3


@njit(cache=True)
def _value(buf: Any, start: int, end: int) -> tuple[int, float]:  # pragma: no cover
    """A TypedValue of exactly one field: ``(kind, number)``; :data:`_MAP`: its JSON object
    is ``buf[start:end]`` less the field's header (found again by the caller)."""
    if start == end:
        return OTHER, 0.0
    number, kind, s, e = field(buf, start, end)
    if number < 0 or e != end:
        return BAD, 0.0
    if number == 3 and kind == 0:  # uint_val
        x, _ = varint(buf, s, e)
        return (NUMBER, float(np.int64(x))) if x < INT63 else (OTHER, 0.0)
    if kind == 2 and number in (10, 11):  # json_val, json_ietf_val
        if e == s:
            return OTHER, 0.0
        if buf[s] == 123:  # '{'
            return _MAP, 0.0
        if number == 10:
            return OTHER, 0.0
        if buf[s] == 34:  # '"': the decoder reads the bytes between the first and the last
            return integer(buf, s + 1, e - 1) if e - s >= 2 else (OTHER, 0.0)
        return integer(buf, s, e)
    if kind == 0 and number in (2, 4):  # int_val, bool_val
        return OTHER, 0.0
    if (kind == 5 and number == 6) or (kind == 1 and number == 14):  # float_val, double_val
        return OTHER, 0.0
    if kind == 2 and number in (5, 13):  # bytes_val, proto_bytes
        return OTHER, 0.0
    if kind == 2 and number in (1, 12):  # string_val, ascii_val: must be UTF-8
        for i in range(s, e):
            if buf[i] >= 0x80:
                return BAD, 0.0
        return OTHER, 0.0
    return BAD, 0.0


@njit(cache=True)
def scan(buf: Any, arena: Any, slots: Any, e_start: Any, e_len: Any, e_ns: Any, e_val: Any,
         e_seen: Any, e_next: Any, gen: Any, out_sid: Any, out_val: Any,
         spans: Any) -> tuple[Any, ...]:
    """One SubscribeResponse: ``(status, timestamp, rows, updates, prefix start, prefix
    length)``; rows go to ``out_sid``/``out_val``, each update's path span to ``spans``. See
    the module docstring."""
    end = buf.shape[0]
    number, kind, ns_, ne = field(buf, 0, end)
    if number != 1 or kind != 2 or ne != end:  # exactly one field: update
        return SLOW, 0, 0, 0, 0, 0
    ts = np.int64(0)
    p_start, p_len = 0, 0
    seen_ts = seen_prefix = False
    n_updates = 0
    pos = ns_
    while pos < ne:  # the notification: timestamp, prefix and updates, nothing else
        number, kind, s, e = field(buf, pos, ne)
        if number == 1 and kind == 0 and not seen_ts:
            x, _ = varint(buf, s, e)
            ts, seen_ts = np.int64(x), True
        elif number == 2 and kind == 2 and not seen_prefix:
            p_start, p_len, seen_prefix = s, e - s, True
        elif number == 4 and kind == 2:
            if n_updates >= spans.shape[0]:
                return SLOW, 0, 0, 0, 0, 0
            spans[n_updates, 0], spans[n_updates, 1] = s, e
            n_updates += 1
        else:
            return SLOW, 0, 0, 0, 0, 0
        pos = e
    prefix = find(buf, p_start, p_len, PREFIX_NS, arena, slots, e_start, e_len, e_ns, e_val)
    missing, slow = prefix == ABSENT, False
    rows = 0
    last = prefix
    for i in range(n_updates):
        u, ue = spans[i, 0], spans[i, 1]
        path_s = path_e = val_s = val_e = -1
        while u < ue:  # exactly one path and one val
            number, kind, s, e = field(buf, u, ue)
            if number == 1 and kind == 2 and path_s < 0:
                path_s, path_e = s, e
            elif number == 3 and kind == 2 and val_s < 0:
                val_s, val_e = s, e
            else:
                return SLOW, 0, 0, 0, 0, 0
            u = e
        if path_s < 0 or val_s < 0:
            return SLOW, 0, 0, 0, 0, 0
        spans[i, 0], spans[i, 1] = path_s, path_e
        what, x = _value(buf, val_s, val_e)
        if what == BAD:
            return SLOW, 0, 0, 0, 0, 0
        if missing:
            continue  # the spans are still wanted (to learn the keys), the rows are not
        n = path_e - path_s
        entry = e_next[last] - 1  # the path that came after the last one last time?
        if entry < 0 or e_len[entry] != n or e_ns[entry] != prefix or not same(
                buf, path_s, n, arena, e_start[entry]):
            entry = find(buf, path_s, n, prefix, arena, slots, e_start, e_len, e_ns, e_val)
            if entry == ABSENT:
                missing = True
                continue
            e_next[last] = entry + 1
        last = entry
        sid = e_val[entry]
        if sid == IGNORED:
            continue
        if what == _MAP:
            _, _, js, je = field(buf, val_s, val_e)
            got = read_map(buf, js, je, entry, arena, slots, e_start, e_len, e_ns, e_val,
                           e_seen, e_next, gen, out_sid, out_val, rows)
            if got == MAP_MISS:
                missing = True
            elif got == MAP_SLOW:
                slow = True
            elif not slow:
                rows = got
        elif sid < 0 or what != NUMBER:
            slow = True
        elif not slow:
            out_sid[rows], out_val[rows] = sid, x
            rows += 1
    status = MISS if missing else SLOW if slow else OK
    return status, ts, rows, n_updates, p_start, p_len


def warm() -> None:
    """Compile (or load from numba's cache) the scan now, not on a stream's first message."""
    keys = WireKeys(capacity=4)
    scan(np.frombuffer(b"", dtype=np.uint8), *keys.arrays, np.zeros(1, np.int64),  # type: ignore[call-arg]
         np.zeros(1, np.float64), np.zeros((1, 2), np.int64))
