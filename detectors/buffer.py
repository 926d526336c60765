"""Buffer misconfiguration: a switch that pauses its neighbours with no overload behind it.

A lossless priority group sends XOFF when the bytes it holds cross its threshold. Sized for the
link's bandwidth-delay product plus burst absorption (hundreds of KB at 400G), that threshold is
out of reach of micro-bursts until the traffic's egress nears saturation, and ECN (marking from
``Kmin``, set below XOFF) acts first (DCQCN, Zhu et al. SIGCOMM'15). A threshold set far too low
lets ordinary bursts cross it: the switch pauses at moderate load, without the standing queues
that real congestion leaves (anchors §6 #9: "PFC fires before ECN"; "config diff across switches
of one role").

Switches of one role (spines, leaves) run the same configuration and, under ECMP, similar loads,
so they pause alike; the one that was configured differently stands out against its peers. Per
switch and sample:

* **pausing**: it paused a neighbour for at least ``min_share`` of the time on some port; where
  the switch has no pause timer, its frame-count bound must reach ``min_share_frames`` (the bound
  over-states a partial pause many times over near saturation, so it is rescaled by the ratio of
  the two thresholds before switches are compared);
* **unlike its peers**: its pausing averaged over its ports (a misconfigured threshold is crossed
  on every busy port, not only behind the hottest egress) is at least ``peer_factor`` times the
  median of the same over the other switches of its role, while its busiest egress runs no hotter
  than theirs (within ``load_margin``);
* **no reason**: none of its egress ports is paused by its downstream neighbour (it is not passing
  on somebody else's congestion), none holds a standing queue (ECN on ``min_ecn`` of its packets)
  or runs saturated (``max_util``);
* **bad** = all three; **good** = not pausing, or pausing like its peers;
* fires after ``fire_after`` (3) samples, clears after ``clear_after`` (3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.kinds import PAUSE_WITHOUT_LOAD
from detectors.rule import DeviceRule, DeviceVerdict
from detectors.signals import At, ecn_fraction, pause_share, tx_util
from pipeline.topology import Topology


class BufferOptions(DetectorOptions):
    fire_after: int = Field(3, ge=1)
    min_share: float = Field(0.01, gt=0, le=1, description="share of time pausing a neighbour")
    min_share_frames: float = Field(0.5, gt=0, description="the same, as a frame-count bound")
    peer_factor: float = Field(5.0, gt=1)
    load_margin: float = Field(0.1, ge=0, le=1)
    max_util: float = Field(0.95, gt=0, le=1)
    min_ecn: float = Field(0.01, gt=0, le=1, description="a standing queue: real congestion")


@dataclass
class _Summary:
    pause: float  # the most the switch paused a neighbour (share of time, or its frame bound)
    spread: float  # the mean over its ports of the same: how widely it pauses
    paused: float  # the most one of its egress ports was paused by a neighbour
    hot: float  # its busiest egress utilisation
    ecn: float  # its highest ECN marking share
    pausing_ports: tuple[str, ...]


class PauseWithoutLoad(DeviceRule):
    name = "buffer_misconfig"
    Options = BufferOptions
    driver = "pfc_tx_frames"
    symptom = PAUSE_WITHOUT_LOAD

    def __init__(self, instance: str, options: BufferOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.latest: dict[int, _Summary] = {}

    def _summary(self, frame: Frame, at: At) -> _Summary:
        tx_share, measured = pause_share(frame, at, "tx")
        rx_share, _ = pause_share(frame, at, "rx")
        util = np.nan_to_num(tx_util(frame, at), nan=0.0)
        ecn = np.nan_to_num(ecn_fraction(frame, at), nan=0.0)
        # frame counts bound the share from above, loosely near saturation (XON/XOFF cycling):
        # express them on the measured scale before comparing switches of mixed dialects
        need = np.where(measured > 0, self.opts.min_share, self.opts.min_share_frames)
        scaled = np.where(np.isfinite(tx_share), tx_share * self.opts.min_share / need, 0.0)
        per_port = np.nanmax(scaled, axis=1)
        pausing = per_port >= self.opts.min_share
        return _Summary(float(per_port.max(initial=0.0)), float(per_port.mean()) if per_port.size
                        else 0.0,
                        float(np.nanmax(np.where(np.isfinite(rx_share), rx_share, 0.0),
                                        initial=0.0)),
                        float(util.max(initial=0.0)), float(ecn.max(initial=0.0)),
                        tuple(frame.ports.label(int(p)) for p in at.pids[pausing]))

    def _peers(self, frame: Frame, did: int) -> list[int]:
        names = frame.ports.names.devices
        me = names[did]
        role = _role(me, self.topology)
        return [d for d in self.latest if d != did and _role(names[d], self.topology) == role]

    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        o = self.opts
        me = self.latest[did] = self._summary(frame, at)
        peers = [self.latest[d] for d in self._peers(frame, did)]
        evidence = {"pause_share": me.pause, "mean_pause_share": me.spread, "max_util": me.hot,
                    "max_ecn": me.ecn,
                    "paused_share": me.paused}
        if not peers:
            return DeviceVerdict(False, False, evidence, me.pausing_ports)
        peer_pause = float(np.median([p.spread for p in peers]))
        peer_hot = float(np.median([p.hot for p in peers]))
        evidence.update(peer_mean_pause_share=peer_pause, peer_max_util=peer_hot)
        pausing = me.pause >= o.min_share
        unlike = me.spread >= o.peer_factor * peer_pause and me.hot <= peer_hot + o.load_margin
        reason = me.paused >= o.min_share or me.ecn >= o.min_ecn or me.hot >= o.max_util
        bad = pausing and unlike and not reason
        good = not pausing or me.spread < o.peer_factor * peer_pause / 2
        evidence["strength"] = min(1.0, me.pause / max(o.min_share * o.peer_factor, 1e-9))
        return DeviceVerdict(bad, good, evidence, me.pausing_ports)


def _role(device: str, topology: Topology | None) -> str:
    if topology is not None:
        if device in topology.spines:
            return "spine"
        if device in topology.leaves:
            return "leaf"
    return device.rstrip("0123456789")
