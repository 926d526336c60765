"""Uplink imbalance across a switch's ECMP group up: flows crowding onto few uplinks.

Collective traffic has low entropy: a few elephant flows per host, so a 5-tuple hash can put
several on one uplink while others idle (Meta SIGCOMM'24: >30 % collective slowdown; Baidu: ~70 of
100 Gbit/s usable). The harm is a member pinned at line rate while its siblings have room. The
group is a switch's links to the tier above it, hashed flow by flow: a leaf's uplinks to its
zone's spines, and in a three-tier fabric also a spine's uplinks to the aggregation tier, which
carry its zone's cross-zone flows (the same physics one tier up: a spine's own hash, its own
baseline). Per switch and sample, over the group's members that are up:

* ``imbalance`` = hottest member's load / the group's mean (anchors §6 #5: start at 1.5);
* it hurts when the hottest member is saturated (``min_hot`` of line rate) and the switch is
  pausing what feeds the group (``min_host_pause``): a leaf its hosts, a spine its leaves (the
  ports of its links down); an uneven group that holds nobody back only counts as the
  rearrangement below;
* the members left cool must be free to send: a member its peer pauses (``min_host_pause`` of
  the time) is cool because of congestion beyond it (a storm or a deadlock upstream holds it),
  not because the hash gave it few flows;
* a hash is static, so a leaf's natural unevenness is its own baseline: the share of the group's
  traffic on the hottest member is learned over the leaf's first ``warmup`` samples and kept while
  the leaf is calm; a *collision* is that share rising by ``min_shift`` or more (flows moving onto
  one member, as a degenerate hash or a polarised tier does). Nothing fires before the baseline
  exists: a group that was uneven from the start is how that leaf's hash spreads its flows (a
  control run with low-entropy traffic must stay quiet), and a TE hint, not an incident.

A collision is also named before it hurts, from the rearrangement alone. Members short of line
rate pass their flows' demand through whole, so while nothing saturates the group's total is the
demand fed into it: flows that *move* leave the total where it was and only change which member
carries them, while traffic that starts, stops or is throttled changes the total. That holds
only while the hot member is free too: one its peer pauses carries what the congestion beyond it
lets through (an incast's flows pinned onto one uplink, held at the spine, while the leaf's other
traffic is held harder), not its flows' demand. So a share that rises by ``min_shift`` while the
total stays within ``max_load_change`` of its learned level (learned with the share) and the hot
member is not paused is the hash concentrating the same flows, with the imbalance and the free
cool members as above: the group has lost the headroom its siblings had, which the next rise
in load turns into held hosts. The group's load is judged from ``min_load`` of one member's line
rate up (below it the shares are noise); a member set that changes (a link down or drained, its
flows rehashed over the survivors) is that incident's consequence, named by the correlator, or
maintenance's (:mod:`pipeline.maintenance`) when the link was drained on purpose.

Fires after ``fire_after`` (2) samples — a hash does not flicker, and the learned baseline plus
saturation and held hosts already rule out noise — and clears after ``clear_after`` (5):
imbalance is a performance incident and a TE hint, never a drain. A rate sample spans an
interval, so the one whose interval holds the onset shows only part of the change: a sample with
half the shift and half the imbalance's excess (the rest as above) counts as the first of the
run, never as its last; the next full sample completes it. Where the moved flows saturate the
member, that sample shows the whole shift but the member only halfway from its learned level to
saturation (its hosts already held): it counts the same way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame, col
from detectors.ports import PortKind
from detectors.rule import CONTINUES, DeviceRule, DeviceVerdict
from detectors.signals import At, pause_share, tx_util
from pipeline.kinds import UPLINK_IMBALANCE
from pipeline.topology.model import LEAF, SPINE, Topology


class UplinkImbalanceOptions(DetectorOptions):
    fire_after: int = Field(2, ge=1)
    clear_after: int = Field(5, ge=1)
    min_imbalance: float = Field(1.5, gt=1)
    min_hot: float = Field(0.9, gt=0, le=1)
    min_shift: float = Field(0.15, gt=0, lt=1)
    warmup: int = Field(10, ge=1)
    min_host_pause: float = Field(0.05, gt=0, le=1, description="pausing what feeds the group")
    baseline_alpha: float = Field(0.05, gt=0, le=1)
    max_load_change: float = Field(
        0.2, gt=0, lt=1, description="a rearrangement keeps the group's total within this share")
    min_load: float = Field(0.05, gt=0, description="group total, in one member's line rate")


class UplinkImbalance(DeviceRule[UplinkImbalanceOptions]):
    name = UPLINK_IMBALANCE
    Options = UplinkImbalanceOptions
    driver = "if_out_octets"
    symptom = UPLINK_IMBALANCE

    def __init__(self, instance: str, options: UplinkImbalanceOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.seen: dict[int, int] = {}
        self.base: dict[int, float] = {}
        self.load: dict[int, float] = {}  # the group's total, learned with the share
        #: per device: (its port ids when judged, which of them are the group, which feed it)
        #: (None for a switch with no group up, remembered like the others)
        self._groups: dict[int, tuple[NDArray[np.int64], NDArray[np.bool_] | None,
                                      NDArray[np.bool_]]] = {}

    def _group(self, frame: Frame, did: int, pids: NDArray[np.int64]
               ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]] | None:
        """Which of a switch's ports form its group up and which feed it: a leaf's fabric ports
        and host ports; a spine's aggregation uplinks and the ports of its links down. None for
        a switch with no group up (an aggregation switch, a spine of two tiers, an unknown
        device)."""
        known = self._groups.get(did)
        if known is not None and np.array_equal(known[0], pids):
            return None if known[1] is None else (known[1], known[2])
        topo = self.topology
        device = frame.ports.names.devices[did]
        kind = frame.ports.kind[pids]
        up: NDArray[np.bool_] | None
        if topo is None or topo.role(device) == LEAF:
            up, feeding = kind == PortKind.FABRIC, kind == PortKind.HOST
        elif topo.role(device) == SPINE and topo.agg_uplinks(device):
            mine = {str(ln.a) if ln.a.device == device else str(ln.b)
                    for ln in topo.agg_uplinks(device)}
            labels = np.array([frame.ports.label(int(p)) in mine for p in pids], bool)
            up = labels & (kind == PortKind.FABRIC)
            feeding = ~labels & (kind == PortKind.FABRIC)
        else:
            up, feeding = None, kind == PortKind.HOST
        self._groups[did] = (pids.copy(), up, feeding)
        return None if up is None else (up, feeding)

    def _in_run(self, did: int) -> bool:
        """Whether the switch's last evaluation was bad (only one sample straddles an onset)."""
        runs = self.persistence.bad_run
        return did < runs.shape[0] and bool(runs[did] > 0)

    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        o = self.opts
        group = self._group(frame, did, at.pids)
        if group is None:
            return DeviceVerdict(False, False)
        up_ports, feeding = group
        tab = frame.table
        oper = tab.value[at.pids, col("if_oper_status")]
        admin = tab.value[at.pids, col("if_admin_status")]
        usable = up_ports & (oper != 2.0) & (admin != 2.0)
        util = tx_util(frame, at)[usable]
        if util.size < 2 or not np.isfinite(util).all():
            return DeviceVerdict(False, False)
        total = float(util.sum())
        if total <= o.min_load:
            return DeviceVerdict(False, True)
        share = util / total
        hot = int(np.argmax(util))
        top = float(share[hot])
        imbalance = float(util[hot] / util.mean())
        n = self.seen.get(did, 0)
        warm = n >= o.warmup
        base = self.base.get(did, top)
        load = self.load.get(did, total)
        if warm:
            moved = top >= base + o.min_shift
            calm = top < base + o.min_shift / 2
        else:
            moved, calm = False, True  # a hash's unevenness is the leaf's normal until learned
        # the same demand on other members: a rearrangement, not traffic that came or went
        kept = abs(total - load) <= o.max_load_change * load
        saturated = util[hot] >= o.min_hot
        share_tx, _ = pause_share(frame, at, "tx")
        held = np.nanmax(np.where(np.isfinite(share_tx[feeding]), share_tx[feeding], 0.0),
                         initial=0.0)
        hurts = held >= o.min_host_pause  # its senders are held back: the group is the bottleneck
        paused, _ = pause_share(frame, at, "rx")
        cool = np.flatnonzero(usable)[np.arange(util.size) != hot]
        held_cool = np.nanmax(np.where(np.isfinite(paused[cool]), paused[cool], 0.0),
                              initial=0.0)
        free = held_cool < o.min_host_pause  # a paused member is cool for what lies beyond it
        row = paused[np.flatnonzero(usable)[hot]]
        hot_paused = float(np.nanmax(np.where(np.isfinite(row), row, 0.0), initial=0.0))
        # a member its peer pauses carries what lies beyond it lets through, not its flows'
        # demand: the total is demand (a rearrangement the hash's) only while the hot one is free
        passes = hot_paused < o.min_host_pause
        uneven = imbalance >= o.min_imbalance and moved and free
        reason = (saturated and hurts) or (kept and passes)
        bad = uneven and reason
        # the sample whose interval holds the onset shows part of the change: half the shift and
        # half the imbalance's excess continue a run that a full sample then completes; where the
        # flows moved saturate the member, that sample shows it halfway from its learned level
        # to saturation, its hosts already held
        halfway = hurts and util[hot] >= (base * load + o.min_hot) / 2
        begun = (warm and not calm and free and imbalance >= (1 + o.min_imbalance) / 2
                 and not self._in_run(did)
                 and ((not moved and reason) or (uneven and not reason and halfway)))
        good = imbalance < (1 + o.min_imbalance) / 2 or calm or not (saturated or kept)
        # the baseline is the hash's normal: learned while warming up, then followed only while
        # the share stays near it, either way (a collision that does not hurt yet must not become
        # the normal, nor a dip while congestion elsewhere holds some flows back)
        near = abs(top - base) < o.min_shift / 2
        if not warm or (near and not self.persistence.is_firing(np.array([did]))[0]):
            self.seen[did] = n + 1
            self.base[did] = top if n == 0 else base + o.baseline_alpha * (top - base)
            self.load[did] = total if n == 0 else load + o.baseline_alpha * (total - load)
        return DeviceVerdict(bad or begun, good and not (bad or begun),
                             {"imbalance": imbalance, "hot_util": float(util[hot]),
                              "host_pause": float(held), "cool_paused": float(held_cool),
                              "hot_paused": hot_paused,
                              "hot_share": top, "baseline_share": base,
                              "load": total, "baseline_load": load,
                              "members": float(util.size)},
                             (frame.ports.label(int(at.pids[usable][hot])),), known=True,
                             fire_after=None if bad else CONTINUES)
