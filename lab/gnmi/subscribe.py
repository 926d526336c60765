"""gNMI Subscribe: STREAM (SAMPLE, ON_CHANGE, TARGET_DEFINED), ONCE and POLL, in simulated time.

A STREAM first sends every subscription's current values (unless ``updates_only``), then
``sync_response``, then for each subscription:

* SAMPLE: every ``sample_interval`` simulated ns (0 means the scenario's sample interval), the
  whole selection, or only what changed when ``suppress_redundant`` is set (with everything again
  every ``heartbeat_interval``);
* ON_CHANGE: whatever changed since it was last sent, checked at every snapshot (a statistics tick,
  0.1 simulated s), plus everything every ``heartbeat_interval``;
* TARGET_DEFINED: status leaves (``oper-status``, ``admin-status``, ``enabled``) ON_CHANGE,
  everything else SAMPLE at the default interval.

A path with no data is not an error (gNMI 3.5.1.3: the target "MUST NOT close the RPC" and keeps
watching for the path): its initial set is empty, so STREAM sends ``sync_response`` at once and
stays open, ONCE sends ``sync_response`` and closes, and each POLL answers ``sync_response``. A
path the target cannot serve at all (an unknown origin or SONiC DB) is refused, and so is a
``sample_interval`` shorter than the statistics tick, the fastest the target samples
(``InvalidArgument``, gNMI 3.5.1.5.2); 0 means the scenario's sample interval.

Samples fire on the first snapshot (statistics tick) at or after their due time, so a 1 s interval
at ``--speed 10`` produces a notification every 0.1 wall seconds, stamped with simulated time.
Snapshots are processed in order even when the agent gets to them late (about a wall second of
ticks is kept), so samples stay exactly one interval apart in simulated time; a client too slow to
keep up makes the stream skip samples rather than queue them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np
from pygnmi.spec.v080 import gnmi_pb2 as pb

from lab import counters as cf
from lab.gnmi.dialects import PathError, SwitchModel
from lab.gnmi.leaves import Kind
from lab.gnmi.render import LeafSelection, Selection
from lab.sim.view import SimView

_SAMPLE, _ON_CHANGE, _TARGET_DEFINED = pb.SAMPLE, pb.ON_CHANGE, pb.TARGET_DEFINED
_STATUS_KINDS = (int(Kind.ENUM), int(Kind.BOOL))


@dataclass
class _Sub:
    sel: Selection
    mode: int                 # SAMPLE or ON_CHANGE after TARGET_DEFINED is split
    interval_s: float
    suppress: bool
    heartbeat_s: float
    next_due: float = 0.0
    last_full: float = 0.0
    skipped: int = 0          # samples never sent because snapshots were missed


class SubscriptionPlan:
    """A validated SubscriptionList, resolved against one switch."""

    def __init__(self, model: SwitchModel, sl: pb.SubscriptionList,
                 default_interval_s: float, min_interval_s: float = 0.0) -> None:
        if sl.encoding not in (pb.JSON, pb.JSON_IETF, pb.PROTO):
            raise PathError("UNIMPLEMENTED",
                            f"encoding {pb.Encoding.Name(sl.encoding)} is not supported; "
                            "use JSON, JSON_IETF or PROTO")
        if not sl.subscription:
            raise PathError("INVALID_ARGUMENT", "the subscription list is empty")
        self.mode = sl.mode
        self.updates_only = sl.updates_only
        self.subs: list[_Sub] = []
        self.missing: list[str] = []      # paths with no data (yet): an empty initial set
        for s in sl.subscription:
            interval = s.sample_interval / 1e9 if s.sample_interval else default_interval_s
            if s.mode in (_SAMPLE, _TARGET_DEFINED) and 0 < interval < min_interval_s - 1e-12:
                raise PathError("INVALID_ARGUMENT",
                                f"sample_interval {s.sample_interval} ns is shorter than this "
                                f"target samples ({round(min_interval_s * 1e9)} ns)")
            try:
                sel, _full = model.resolve(sl.prefix, s.path, sl.encoding)
            except PathError as exc:
                if exc.code != "NOT_FOUND" or not model.known_target(sl.prefix):
                    raise
                self.missing.append(str(exc))
                continue
            hb = s.heartbeat_interval / 1e9
            if s.mode == _TARGET_DEFINED and isinstance(sel, LeafSelection):
                self._split(model, sl, s, sel, default_interval_s, hb)
                continue
            mode = _ON_CHANGE if s.mode == _ON_CHANGE else _SAMPLE
            self.subs.append(_Sub(sel, mode, interval, s.suppress_redundant, hb))

    def _split(self, model: SwitchModel, sl: pb.SubscriptionList, s: pb.Subscription,
               sel: LeafSelection, default_s: float, hb: float) -> None:
        status = np.isin(sel.kinds, _STATUS_KINDS)
        table = model.table
        for mask, mode in ((status, _ON_CHANGE), (~status, _SAMPLE)):
            if not mask.any():
                continue
            idx = sel.sel[mask]
            part = LeafSelection(table, idx, sl.encoding, sel.resp.update.prefix, model.epoch_ns)
            self.subs.append(_Sub(part, mode, default_s, False, hb))


async def run_stream(plan: SubscriptionPlan, view: SimView) -> AsyncIterator[pb.SubscribeResponse]:
    # the schedule starts at this snapshot, however long the initial notifications take to send
    seen = view.pub
    snap = view.snapshot
    now = view.time_s
    ts = view.ts_ns(snap)
    for sub in plan.subs:
        if not plan.updates_only:
            yield sub.sel.full(snap, ts)
        elif sub.mode == _ON_CHANGE or sub.suppress:
            sub.sel.full(snap, ts)   # baseline for change detection, not sent
        sub.next_due = now + sub.interval_s
        sub.last_full = now
    yield pb.SubscribeResponse(sync_response=True)
    while True:
        batch = await view.snapshots_after(seen)
        seen = batch[-1][0]
        for _pub, snap in batch:
            now = float(snap[cf.H_TIME])
            ts = view.ts_ns(snap)
            for sub in plan.subs:
                resp = _due(sub, snap, now, ts)
                if resp is not None:
                    yield resp


def _due(sub: _Sub, snap: np.ndarray, now: float, ts: int) -> pb.SubscribeResponse | None:
    eps = 1e-9
    heartbeat = sub.heartbeat_s > 0 and now >= sub.last_full + sub.heartbeat_s - eps
    if sub.mode == _SAMPLE:
        if now < sub.next_due - eps:
            return None
        # floor with slack: snapshot times are float multiples of the step, and a tiny negative
        # difference must not hold the schedule back (that would send the sample twice)
        missed = (max(0, int((now - sub.next_due + eps) // sub.interval_s))
                  if sub.interval_s > 0 else 0)
        sub.skipped += missed
        sub.next_due += (missed + 1) * sub.interval_s
        if sub.suppress and not heartbeat:
            return sub.sel.delta(snap, ts)
        sub.last_full = now
        return sub.sel.full(snap, ts)
    if heartbeat:
        sub.last_full = now
        return sub.sel.full(snap, ts)
    return sub.sel.delta(snap, ts)


def snapshot_responses(plan: SubscriptionPlan, view: SimView) -> list[pb.SubscribeResponse]:
    """Everything once (ONCE, and each POLL), followed by ``sync_response``; with
    ``updates_only``, only the ``sync_response`` (gNMI 3.5.1.2)."""
    snap = view.snapshot
    ts = view.ts_ns(snap)
    out = [] if plan.updates_only else [_copy(sub.sel.full(snap, ts)) for sub in plan.subs]
    out.append(pb.SubscribeResponse(sync_response=True))
    return out


def _copy(resp: pb.SubscribeResponse) -> pb.SubscribeResponse:
    # templates are reused, so a list that outlives the next fill needs its own copy
    out = pb.SubscribeResponse()
    out.CopyFrom(resp)
    return out
