"""The gNMI hot path: SubscribeResponse bytes → per-device sample columns.

A steady stream's message is read first by the compiled scan of its wire bytes
(:mod:`collectors.gnmi.scan`: no protobuf objects, no Python per update); a message it cannot
read exactly as below (a key not learnt yet, an enum, a delete, anything unusual) comes here.
The decoder reads the protobuf directly (pygnmi's dict conversion costs about four times as much,
notes §4.4). Each update path is looked up by its serialized bytes in a cache shared by every
target of the profile, so such a message costs one ``SerializeToString``, one dict lookup and one
``WhichOneof`` per update; ``uint_val`` and RFC 7951 numeric strings (JSON_IETF encodes 64-bit
integers as ``"123"``) are read inline. Everything else (enums, floats, JSON maps such as SONiC's,
bad values) takes the slow path, which also does the counting of bad input: one bad update is
counted and dropped while the rest of its notification goes through.

Rows wait in plain lists until :meth:`GnmiDecoder.take` turns them into a :class:`SampleBatch` with
numpy: columns are gathered from the mapper's per-spec arrays and the target's expected series
count is updated. A counter that went down is left for the rate rule to judge
(:mod:`pipeline.rates`: a fall of a 64-bit counter is a reset there), in event-time order.

**The first update after a reconnect.** A new STREAM subscription starts with the current value
of everything, stamped "now", then samples every interval from there. Right after a short outage
"now" can be a fraction of an interval after the last sample the old stream sent: that initial
value would add an interval of a fraction of the cadence (noisy, and one more evaluation for every
detector: an interval doubled). So a SAMPLE series' value in the initial set of a reconnected
stream is dropped when it comes less than :data:`REPEAT_FRACTION` of an interval after the
target's previous sample; the next sample then ends one interval of one to two cadences, which
the rate rule rates (no gap, nothing doubled). Status (ON_CHANGE) values of the initial set are
always kept: they are the state now.
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError as ProtobufDecodeError
from numpy.typing import NDArray
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi import scan as wire_scan
from collectors.gnmi.mapping import IGNORED, UNKNOWN, PathMapper, canonical
from collectors.gnmi.wire import keys_for
from collectors.health import ErrorTally, TargetHealth
from pipeline.metrics import metric_id
from pipeline.model import SampleBatch

#: IF-MIB notPresent: what a deleted interface's oper-status becomes
NOT_PRESENT = 6.0
#: an initial value closer than this share of an interval to the previous sample is a repeat
REPEAT_FRACTION = 0.75
#: the most digits after the point a Decimal64 may claim (its 64-bit digits hold 19)
MAX_DECIMAL_PRECISION = 100
_OPER_STATUS = metric_id("if_oper_status")
_MODULE_PREFIX = re.compile(r"^[a-z][a-z0-9_.-]*:")
_SCALARS = frozenset({"uint_val", "int_val", "double_val", "float_val", "bool_val",
                      "string_val", "ascii_val"})

Elems = list[tuple[str, dict[str, str]]]
#: the scan's output: spec ids, values, each update's path span
_Out = tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]
_OUT = threading.local()


def _buffers(size: int) -> _Out:
    """This thread's scan output, room for a message of ``size`` bytes (a row, or an update,
    takes at least four); shared by the thread's decoders, each of which takes its rows out
    before the next scan."""
    out: _Out | None = getattr(_OUT, "out", None)
    room = size // 4 + 1
    if out is None or out[0].shape[0] < room:
        room = max(room, 4096)
        out = _OUT.out = (np.zeros(room, np.int64), np.zeros(room, np.float64),
                          np.zeros((room, 2), np.int64))
    return out


def path_elems(*paths: pb.Path) -> Elems:
    return [(e.name, dict(e.key)) for p in paths for e in p.elem]


def _member(name: str) -> str:
    """RFC 7951 member names may be module-qualified (``openconfig-interfaces:in-octets``)."""
    return _MODULE_PREFIX.sub("", name, count=1) if ":" in name else name


class GnmiDecoder:
    """One target's decoding state: buffered rows and the expected series."""

    def __init__(self, device: str, mapper: PathMapper, health: TargetHealth,
                 tally: ErrorTally, scan: bool = True) -> None:
        """``scan=False``: every message through protobuf (the reference the scan must match)."""
        self.device = device
        self.mapper = mapper
        self.health = health
        self.tally = tally
        self.repeat_ns = int(health.interval_ns * REPEAT_FRACTION)
        self._sids: list[int] = []
        self._vals: list[float] = []
        self._ts: list[int] = []
        self._counts: list[int] = []
        self._deleted: list[int] = []
        self._expected = np.zeros(0, dtype=bool)
        #: the time of the newest SAMPLE notification (0: none yet)
        self._last_sampled_ns = 0
        #: the newest SAMPLE time of the previous session (0: this is the first session)
        self._before_ns = 0
        #: initial values dropped as repeats of a sample just before a reconnect
        self.repeats_dropped = 0
        self._keys = keys_for(mapper)
        self._scan = scan
        #: messages the compiled scan decoded, and those it gave to protobuf
        self.scanned = self.parsed = 0

    def begin_session(self) -> None:
        """A new session starts: its initial values are judged against the last sample."""
        self._before_ns = self._last_sampled_ns

    @property
    def pending(self) -> int:
        """Rows decoded and not yet taken."""
        return len(self._sids)

    # -- feeding (the session) ----------------------------------------------------------------

    def feed(self, data: bytes, wall: float, initial: bool = False) -> bool:
        """Decode one serialized SubscribeResponse (``initial``: of a stream not synced yet);
        True when it was the ``sync_response``. Bad input is counted, never raised.

        A steady stream's message is read by the compiled scan (:mod:`collectors.gnmi.wire`);
        whatever it gives back goes through protobuf, which then teaches it the new keys."""
        status, ts, rows, p0, pn = wire_scan.SLOW, 0, 0, 0, 0
        if self._scan:
            out = _buffers(len(data))
            status, ts, rows, _, p0, pn = wire_scan.scan(  # type: ignore[call-arg]
                np.frombuffer(data, dtype=np.uint8), *self._keys.arrays, *out)
            if status == wire_scan.OK:
                self.scanned += 1
                self.health.note_message(wall)
                self._scanned(out, ts, rows, wall, initial)
                return False
        self.parsed += 1
        try:
            resp = pb.SubscribeResponse.FromString(data)
        except ProtobufDecodeError as exc:
            self.tally.record(self.health, "malformed", f"undecodable SubscribeResponse: {exc}")
            return False
        self.health.note_message(wall)
        which = resp.WhichOneof("response")
        if which == "update":
            self._notification(resp.update, wall, initial)
            if status == wire_scan.MISS:
                n = resp.update
                self._keys.learn(data, (p0, pn), _buffers(len(data))[2], n.update,
                                 self.mapper.byte_cache.get(n.prefix.SerializeToString()),
                                 self.mapper.plain)
        elif which == "sync_response":
            self.health.synced = True
            return True
        elif which == "error":
            self.tally.record(self.health, "target_error", resp.error.message or "error")
        else:
            self.tally.record(self.health, "malformed", "SubscribeResponse without a response")
        return False

    def _scanned(self, out: _Out, ts: int, rows: int, wall: float, initial: bool) -> None:
        """The scan's rows of one notification, as :meth:`_notification` would have them."""
        ts = self._stamp(ts, wall)
        start = len(self._sids)
        if rows:
            self._sids.extend(out[0][:rows].tolist())
            self._vals.extend(out[1][:rows].tolist())
            if initial and self._before_ns:
                self._drop_repeats(start, ts)
        self._close(start, ts, wall)

    def _stamp(self, ts: int, wall: float) -> int:
        if ts <= 0:
            self.tally.record(self.health, "no_timestamp",
                              "notification without a timestamp (collector clock used)")
            ts = self.health.clock.now_ns(wall)
        return ts

    def _notification(self, n: pb.Notification, wall: float, initial: bool = False) -> None:
        ts = self._stamp(n.timestamp, wall)
        prefix = n.prefix
        table = self.mapper.byte_cache.get(prefix.SerializeToString())
        if table is None:
            table = self.mapper.byte_cache.setdefault(prefix.SerializeToString(), {})
        sids, vals = self._sids, self._vals
        start = len(sids)
        get, add_sid, add_val = table.get, sids.append, vals.append
        for u in n.update:
            key = u.path.SerializeToString()
            sid = get(key)
            if sid is None:
                sid = table[key] = self._resolve(prefix, u.path)
            if sid == IGNORED:
                continue
            v = u.val
            if sid >= 0:
                # the two forms a steady stream uses; checking the JSON bytes first spares a
                # WhichOneof call per update (an unset bytes field reads as b"")
                raw = v.json_ietf_val
                if raw:
                    try:
                        add_val(int(raw[1:-1] if raw[0] == 34 else raw))  # 34: '"'
                    except ValueError:
                        pass
                    else:
                        add_sid(sid)
                        continue
                elif v.WhichOneof("value") == "uint_val":
                    add_val(v.uint_val)
                    add_sid(sid)
                    continue
            self._slow(sid, v.WhichOneof("value"), v, prefix, u.path, table, key)
        if initial and self._before_ns and len(sids) > start:
            self._drop_repeats(start, ts)
        if n.delete:
            self._deletes(prefix, n.delete)
        self._close(start, ts, wall)

    def _close(self, start: int, ts: int, wall: float) -> None:
        """The notification whose rows start at ``start`` is complete."""
        sids = self._sids
        count = len(sids) - start
        sampled = False
        if count:
            self._ts.append(ts)
            self._counts.append(count)
            flags = self.mapper.sampled
            sampled = flags[sids[start]] or flags[sids[-1]]
            if sampled and ts > self._last_sampled_ns:
                self._last_sampled_ns = ts
        self.health.note_data(count, ts, wall, sampled)

    def _drop_repeats(self, start: int, ts: int) -> None:
        """Drop a reconnected stream's initial SAMPLE values that repeat the last interval."""
        if ts - self._before_ns >= self.repeat_ns:
            return
        flags = self.mapper.sampled
        sids, vals = self._sids, self._vals
        keep = [i for i in range(start, len(sids)) if not flags[sids[i]]]
        self.repeats_dropped += len(sids) - start - len(keep)
        sids[start:], vals[start:] = [sids[i] for i in keep], [vals[i] for i in keep]

    def _resolve(self, prefix: pb.Path, path: pb.Path) -> int:
        return self.mapper.resolve(canonical(path_elems(prefix, path)))

    def _slow(self, sid: int, kind: str | None, v: pb.TypedValue, prefix: pb.Path,
              path: pb.Path, table: dict[Any, int], key: bytes) -> None:
        value: Any
        if kind in ("json_ietf_val", "json_val"):
            raw = getattr(v, kind)
            try:
                value = json.loads(raw)
            except ValueError as exc:
                self.tally.record(self.health, "malformed_json",
                                  f"{self._where(prefix, path)}: {exc}")
                return
            if isinstance(value, dict):
                self._expand(value, prefix, path, table, key)
                return
        elif kind in _SCALARS:
            value = getattr(v, kind)
        elif kind == "decimal_val":
            if v.decimal_val.precision > MAX_DECIMAL_PRECISION:  # 10**(2**32-1) never ends
                self.tally.record(self.health, "wrong_type",
                                  f"{self._where(prefix, path)}: decimal precision "
                                  f"{v.decimal_val.precision}")
                return
            value = v.decimal_val.digits / 10 ** v.decimal_val.precision
        else:
            self.tally.record(self.health, "wrong_type",
                              f"{self._where(prefix, path)}: {kind or 'empty'} value")
            return
        if sid == UNKNOWN:
            self.tally.record(self.health, "unknown_path", self._where(prefix, path))
        elif sid != IGNORED:
            self._append(sid, value, prefix, path)

    def _expand(self, obj: dict[str, Any], prefix: pb.Path, path: pb.Path,
                table: dict[Any, int], key: bytes) -> None:
        """A JSON map continues the path with its member names (SONiC's port → field maps)."""
        base = ""
        get, plain = table.get, self.mapper.plain
        add_sid, add_val = self._sids.append, self._vals.append
        stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), obj)]
        while stack:
            names, node = stack.pop()
            for name, value in node.items():
                leaf = (*names, name)
                if type(value) is dict:
                    stack.append((leaf, value))
                    continue
                ckey = (key, *leaf)
                sid = get(ckey)
                if sid is None:
                    base = base or canonical(path_elems(prefix, path))
                    text = base + "/" + "/".join(_member(n) for n in leaf)
                    sid = table[ckey] = self.mapper.resolve(text)
                if sid < 0:
                    if sid == UNKNOWN:
                        self.tally.record(self.health, "unknown_path",
                                          f"{base or canonical(path_elems(prefix, path))}/"
                                          f"{'/'.join(leaf)}")
                    continue
                if type(value) is str and plain[sid]:  # SONiC's "123": the common case
                    try:
                        add_val(int(value))
                    except ValueError:
                        pass
                    else:
                        add_sid(sid)
                        continue
                self._append(sid, value, prefix, path)

    def _append(self, sid: int, value: Any, prefix: pb.Path, path: pb.Path) -> None:
        spec = self.mapper.specs[sid]
        x: float | int | None
        if isinstance(value, bool):
            x = int(value)
        elif isinstance(value, (int, float)):
            x = value
        elif isinstance(value, str):
            if spec.enum is not None:
                x = spec.enum.get(value.rsplit(":", 1)[-1].lower())
            else:
                try:
                    x = int(value)
                except ValueError:
                    try:
                        x = float(value)
                    except ValueError:
                        x = None
        else:
            x = None
        if x is None or (isinstance(x, float) and not math.isfinite(x)) or (
                x < 0 and self.mapper.is_counter(sid)):
            self.tally.record(self.health, "wrong_type",
                              f"{self._where(prefix, path)}: {value!r} for "
                              f"{self.mapper.describe(sid)}")
            return
        self._sids.append(sid)
        self._vals.append(x)

    def _deletes(self, prefix: pb.Path, deletes: Any) -> None:
        for d in deletes:
            gone = self.mapper.under(canonical(path_elems(prefix, d)))
            self.health.deletes_total += 1
            self._deleted.extend(gone)
            for sid in gone:
                if self.mapper.specs[sid].metric == _OPER_STATUS:
                    self._sids.append(sid)
                    self._vals.append(NOT_PRESENT)

    def _where(self, prefix: pb.Path, path: pb.Path) -> str:
        return canonical(path_elems(prefix, path))

    # -- taking (the collector's ticker) ------------------------------------------------------

    def take(self) -> SampleBatch | None:
        """The rows decoded since the last call as one batch (None when there are none)."""
        if not self._sids and not self._deleted:
            return None  # the ticker's common case; the expected count is as it was
        sids, vals, stamps, counts = self._sids, self._vals, self._ts, self._counts
        deleted = self._deleted
        self._sids, self._vals, self._ts, self._counts = [], [], [], []
        self._deleted = []
        metric, port, qual, scale, flags, is_counter = self.mapper.arrays()
        ports = tuple(self.mapper.ports)
        self._grow(len(metric))
        if deleted:
            self._expected[np.asarray(deleted, dtype=np.intp)] = False
        if not sids:
            self.health.expected = int(self._expected.sum())
            return None
        sid = np.array(sids, dtype=np.intp)
        n = sid.shape[0]
        value = np.array(vals, dtype=np.float64)
        if self.mapper.scaled:
            value *= scale[sid]
        ts = np.repeat(np.array(stamps, dtype=np.int64), counts)
        if ts.shape[0] < n:  # rows from deletes carry the last notification's time
            ts = np.concatenate([ts, np.full(n - ts.shape[0], ts[-1] if len(ts) else 0)])
        negative = (value < 0) & is_counter[sid]
        if negative.any():  # the inline integer path lets "-5" through; counters cannot be
            self.tally.record(self.health, "wrong_type",
                              f"negative value for {self.mapper.describe(int(sid[negative][0]))}",
                              int(negative.sum()))
            keep = ~negative
            sid, value, ts = sid[keep], value[keep], ts[keep]
            n = sid.shape[0]
            if not n:
                return None
        row_flags = flags[sid]
        self._expected[sid[self.mapper.sampled_mask()[sid]]] = True
        self.health.expected = int(self._expected.sum())
        return SampleBatch(ts, np.zeros(n, dtype=np.int32), port[sid], metric[sid], qual[sid],
                           value, row_flags, (self.device,), ports)

    def _grow(self, size: int) -> None:
        if self._expected.shape[0] < size:
            self._expected = np.concatenate(
                [self._expected, np.zeros(size - self._expected.shape[0], dtype=bool)])
