"""LLDP neighbours over a gNMI STREAM ON_CHANGE subscription: a target's table kept from its
notifications, a report whenever it changes.

One Subscribe call per target asks for the paths of a read (:func:`collectors.gnmi.lldp.requests`),
each ON_CHANGE. The target first sends every path's current value, then ``sync_response``, then
whatever changes: new or changed values, and ``delete`` paths for what went (a neighbour that
disappeared). :class:`LldpTable` keeps the values by the path they came at:

* an update at a path replaces what that path held, and anything held under it (a container sent
  again as a JSON tree);
* a delete removes the path and everything under it (a neighbour's whole entry, or its leaves one
  by one);
* an update whose content is the one already held is no change. Content is compared without the
  fields that move while the neighbour does not (SONiC's ``lldp_rem_time_mark``, the neighbour's
  age, which lldp_syncd rewrites and sonic-gnmi sends again), so a target restating its table is
  decoded once per change, not once per notification.

A fresh subscription (the first, or after the stream failed) gathers its initial values into a
new table, and the table it syncs replaces the old one whole: nothing a restart missed stays, and
until the new sync the old table stands (no gap). When a synced stream is lost, the table is
reported once more as a snapshot (not ``streamed``): until the next sync nobody watches it
change, so detection takes it as known at its time only. The synced table is reported at once; after
that, changes arriving within ``coalesce_s`` of the first one go out as one report (a burst, a
fabric-wide event, is one report per target, not one per notification). A report is stamped with
the timestamp of the newest notification that changed the table (the device's clock) and marked
``streamed``: the table holds until the next report (detection confirms a change by how long it
held, :mod:`detectors.topology`).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.channel import metadata
from collectors.gnmi.lldp import SUBSCRIBE, Leaf, PathKey, elems, report_of, requests, scalar, walk
from collectors.gnmi.subscription import ENCODINGS
from collectors.profile import GnmiProfile
from pipeline.errors import CollectorError
from pipeline.topology.neighbors import NeighborReport

#: fields that move while the neighbour does not; left out when content is compared
_VOLATILE = re.compile(rb'"lldp_rem_time_mark"\s*:\s*"[^"]*"\s*,?\s*')

Deliver = Callable[[NeighborReport], Awaitable[None]]


class StreamEnded(CollectorError):
    """The target ended an ON_CHANGE subscription (it is subscribed again)."""


def subscribe_request(profile: GnmiProfile) -> pb.SubscribeRequest:
    """The STREAM request of a target's LLDP: every path of a read, ON_CHANGE."""
    prefix, paths = requests(profile, profile.encoding)
    slist = pb.SubscriptionList(
        prefix=prefix, mode=pb.SubscriptionList.STREAM, encoding=ENCODINGS[profile.encoding],
        subscription=[pb.Subscription(path=p, mode=pb.ON_CHANGE) for p in paths])
    return pb.SubscribeRequest(subscribe=slist)


def _content(val: pb.TypedValue) -> bytes:
    """What a value says, for comparison (a digest, without the volatile fields; of a JSON
    value's own text, not its serialized message, whose length prefix moves with it)."""
    kind = val.WhichOneof("value")
    raw = (getattr(val, kind) if kind in ("json_ietf_val", "json_val")
           else val.SerializeToString(deterministic=True))
    h = hashlib.blake2b(f"{kind}\0".encode(), digest_size=16)
    h.update(_VOLATILE.sub(b"", raw))
    return h.digest()


class LldpTable:
    """One target's LLDP table as its notifications leave it; see the module docstring."""

    def __init__(self, device: str, profile: GnmiProfile) -> None:
        self.device = device
        self.profile = profile
        #: path an update came at -> (its content's digest, its leaves)
        self.entries: dict[PathKey, tuple[bytes, list[Leaf]]] = {}
        #: the newest change's timestamp (the device's clock; 0: none had one)
        self.ts_ns = 0

    def apply(self, note: pb.Notification) -> bool:
        """Take one notification; whether what the table says changed (then the table's time
        is the notification's: a restatement does not move it)."""
        base = elems(note.prefix)
        changed = False
        for path in note.delete:
            changed = self._remove(base + elems(path), under_only=False) or changed
        for u in note.update:
            key = base + elems(u.path)
            digest = _content(u.val)
            held = self.entries.get(key)
            if held is not None and held[0] == digest:
                continue
            self._remove(key, under_only=True)
            leaves: list[Leaf] = []
            walk(key, scalar(u.val), leaves)
            self.entries[key] = (digest, leaves)
            changed = True
        if changed:
            self.ts_ns = max(self.ts_ns, note.timestamp)
        return changed

    def _remove(self, path: PathKey, under_only: bool) -> bool:
        n = len(path)
        least = n + 1 if under_only else n
        gone = [k for k in self.entries if len(k) >= least and k[:n] == path]
        for k in gone:
            del self.entries[k]
        return bool(gone)

    def report(self) -> NeighborReport:
        """The table as a report, stamped with its newest change's time."""
        leaves = [leaf for _digest, held in self.entries.values() for leaf in held]
        report = report_of(self.device, self.profile, self.ts_ns or time.time_ns(), leaves)
        return report.model_copy(update={"streamed": True})


class LldpStream:
    """One target's ON_CHANGE subscription, kept across restarts by its reader."""

    def __init__(self, device: str, profile: GnmiProfile, coalesce_s: float) -> None:
        self.device = device
        self.profile = profile
        #: wall seconds a change waits for more before it is reported
        self.coalesce_s = coalesce_s
        #: the synced table (None until the first sync)
        self.table: LldpTable | None = None
        self.syncs = 0
        #: notifications after a sync that changed the table
        self.changes = 0
        self._flush: asyncio.Task[None] | None = None
        #: a synced stream is open: the table's last report holds until the next one
        self._live = False

    async def follow(self, channel: grpc.aio.Channel, secrets: Any, stopping: asyncio.Event,
                     deliver: Deliver) -> None:
        """Subscribe and report until the collector stops; raises what ended the stream."""
        rpc = channel.stream_stream(SUBSCRIBE,
                                    request_serializer=pb.SubscribeRequest.SerializeToString,
                                    response_deserializer=pb.SubscribeResponse.FromString)
        call = rpc(metadata=metadata(secrets))
        await call.write(subscribe_request(self.profile))  # the request side stays open
        reader = asyncio.ensure_future(self._read(call, deliver))
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait([reader, stop], return_when=asyncio.FIRST_COMPLETED)
        finally:
            call.cancel()
            for task in (reader, stop):
                task.cancel()
            ended = (await asyncio.gather(reader, return_exceptions=True))[0]
        if stopping.is_set():
            return
        if isinstance(ended, BaseException) and not isinstance(ended, asyncio.CancelledError):
            raise ended
        raise StreamEnded(f"{self.device} ended its LLDP subscription")

    async def _read(self, call: Any, deliver: Deliver) -> None:
        fresh: LldpTable | None = LldpTable(self.device, self.profile)
        while True:
            resp = await call.read()
            if resp is grpc.aio.EOF:
                return
            if resp.sync_response:
                if fresh is not None:   # the fresh table replaces the old one whole
                    self.table, fresh = fresh, None
                    self.syncs += 1
                    self._live = True
                    self._cancel_flush()
                    await deliver(self.table.report())
                continue
            if not resp.HasField("update"):
                continue
            if fresh is not None:
                fresh.apply(resp.update)
            elif self.table is not None and self.table.apply(resp.update):
                self.changes += 1
                if self._flush is None:
                    self._flush = asyncio.ensure_future(self._report_later(deliver))

    async def _report_later(self, deliver: Deliver) -> None:
        await asyncio.sleep(self.coalesce_s)
        self._flush = None
        if self.table is not None:
            await deliver(self.table.report())

    def _cancel_flush(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def lost(self) -> NeighborReport | None:
        """The table as a snapshot at its time, once per loss of a synced stream (None: nothing
        to say): what it held is no longer known to hold, and detection must not take it for a
        live table until the next sync."""
        if not self._live or self.table is None:
            return None
        self._live = False
        return self.table.report().model_copy(update={"streamed": False})

    def close(self) -> None:
        """Drop a report still waiting (the collector stops)."""
        self._cancel_flush()
