"""The compiled scan's reading of a JSON map value (SONiC's port → field → ``"123"`` maps).

:func:`read_map` walks an RFC 7951 object the way :meth:`GnmiDecoder._expand
<collectors.gnmi.decode.GnmiDecoder._expand>` walks what ``json.loads`` made of it: members in
order, a nested object put on a stack and read after the object that holds it (last pushed, first
read), so the rows come out in the same order. A member is looked up by its name's bytes in the
wire table (:mod:`collectors.gnmi.wire`) under its parent's entry; a member that was an object
there is :data:`~collectors.gnmi.wire.OBJECT`, a leaf its spec id when the spec is a plain
number, :data:`~collectors.gnmi.wire.SLOW_LEAF` otherwise.

Only a plain subset of JSON is read: ASCII without control characters, names and values without
escapes, values that are objects or strings of an integer (as :func:`collectors.gnmi.wire.integer`
reads them), no member twice in one object (``json.loads`` would keep the last). Anything else, and
any member not in the table, gives the message back to protobuf and ``json``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from collectors.gnmi.mapping import IGNORED
from collectors.gnmi.wire import NUMBER, OBJECT, find, integer, same

#: what :func:`read_map` returns instead of a row count
MAP_MISS, MAP_SLOW = -1, -2


@njit(cache=True)
def _space(buf: Any, p: int, end: int) -> int:  # pragma: no cover
    while p < end and buf[p] in (32, 9, 10, 13):
        p += 1
    return p


@njit(cache=True)
def _string(buf: Any, p: int, end: int) -> int:  # pragma: no cover
    """The closing quote of the plain string whose opening quote is at ``p`` (-1: not plain)."""
    p += 1
    while p < end:
        b = buf[p]
        if b == 34:
            return p
        if b < 32 or b > 126 or b == 92:  # control, non-ASCII, backslash
            return -1
        p += 1
    return -1


@njit(cache=True)
def _skip_object(buf: Any, p: int, end: int) -> int:  # pragma: no cover
    """The position after the object opening at ``p`` (-1: unbalanced or not plain)."""
    depth = 0
    while p < end:
        b = buf[p]
        if b == 34:
            p = _string(buf, p, end)
            if p < 0:
                return -1
        elif b == 123:
            depth += 1
        elif b == 125:
            depth -= 1
            if depth == 0:
                return p + 1
        p += 1
    return -1


@njit(cache=True)
def read_map(buf: Any, start: int, end: int, ns: int, arena: Any, slots: Any, e_start: Any,
             e_len: Any, e_ns: Any, e_val: Any, e_seen: Any, e_next: Any, gen: Any, out_sid: Any,
             out_val: Any, rows: int) -> int:  # pragma: no cover
    """The rows of the JSON object in ``buf[start:end]`` (a TypedValue's whole JSON) appended at
    ``rows``; the new row count, or :data:`MAP_MISS` / :data:`MAP_SLOW`."""
    top_end = _skip_object(buf, start, end)
    if top_end < 0 or _space(buf, top_end, end) != end:
        return MAP_SLOW
    stack = np.empty((max(4, (end - start) // 4), 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = start, top_end, ns
    depth = 1
    while depth:
        depth -= 1
        p, oe, parent = stack[depth, 0], stack[depth, 1] - 1, stack[depth, 2]  # oe: its '}'
        gen[0] += 1
        g = gen[0]
        p = _space(buf, p + 1, oe)
        if p == oe:
            continue  # {}
        last = parent
        while True:
            if p >= oe or buf[p] != 34:
                return MAP_SLOW
            ke = _string(buf, p, oe)
            if ke < 0:
                return MAP_SLOW
            n = ke - p - 1
            entry = e_next[last] - 1  # the member that came after the last one last time?
            if entry < 0 or e_len[entry] != n or e_ns[entry] != parent or not same(
                    buf, p + 1, n, arena, e_start[entry]):
                entry = find(buf, p + 1, n, parent, arena, slots, e_start, e_len, e_ns, e_val)
                if entry < 0:
                    return MAP_MISS
                e_next[last] = entry + 1
            last = entry
            if e_seen[entry] == g:  # a member twice: json.loads keeps the last
                return MAP_SLOW
            e_seen[entry] = g
            p = _space(buf, ke + 1, oe)
            if p >= oe or buf[p] != 58:  # ':'
                return MAP_SLOW
            p = _space(buf, p + 1, oe)
            if p >= oe:
                return MAP_SLOW
            what = e_val[entry]
            if buf[p] == 123:
                q = _skip_object(buf, p, oe)
                if q < 0 or what != OBJECT:
                    return MAP_SLOW
                stack[depth, 0], stack[depth, 1], stack[depth, 2] = p, q, entry
                depth += 1
                p = q
            elif buf[p] == 34:
                q = _string(buf, p, oe)
                if q < 0:
                    return MAP_SLOW
                if what != IGNORED:
                    if what < 0 or q == p + 1 or rows >= out_sid.shape[0]:
                        return MAP_SLOW
                    kind, x = integer(buf, p + 1, q)
                    if kind != NUMBER:
                        return MAP_SLOW
                    out_sid[rows], out_val[rows] = what, x
                    rows += 1
                p = q + 1
            else:
                return MAP_SLOW  # numbers, literals, arrays: json's and the decoder's rules
            p = _space(buf, p, oe)
            if p == oe:
                break
            if buf[p] != 44:  # ','
                return MAP_SLOW
            p = _space(buf, p + 1, oe)
    return rows
