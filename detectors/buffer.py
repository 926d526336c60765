"""Buffer misconfiguration: a switch that pauses its neighbours with no overload behind it.

A lossless priority group sends XOFF when the bytes it holds cross its threshold. Sized for the
link's bandwidth-delay product plus burst absorption (hundreds of KB at 400G), that threshold is
out of reach of micro-bursts until the egress the traffic continues on is close to saturation, and
ECN (marking from ``Kmin``, set below XOFF) acts first (DCQCN, Zhu et al. SIGCOMM'15). A threshold
set far too low lets ordinary bursts cross it: the switch pauses at moderate load, with no
congestion downstream to explain it (anchors §6 #9, "PFC fires before ECN").

The rule, per switch and sample:

* **pausing**: the switch paused a neighbour for at least ``min_share`` of the time on some port
  (``min_share_frames`` where only frame counts exist);
* **no reason**: none of its egress ports is paused by a downstream device (it is not passing on
  somebody else's congestion), none runs above ``max_util`` of line rate or holds a standing queue
  (ECN marking ``min_ecn`` of its packets: no real overload), and the ports it pauses receive less
  than ``max_util`` (the senders are not overloading it either);
* **bad** = pausing and no reason; **good** = not pausing; a congested switch is left undecided;
* fires after ``fire_after`` (3) samples, clears after ``clear_after`` (3).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.kinds import PAUSE_WITHOUT_LOAD
from detectors.rule import DeviceRule, DeviceVerdict
from detectors.signals import At, ecn_fraction, pause_share, rx_util, tx_util
from pipeline.topology import Topology


class BufferOptions(DetectorOptions):
    fire_after: int = Field(3, ge=1)
    min_share: float = Field(0.01, gt=0, le=1)
    min_share_frames: float = Field(0.1, gt=0)
    max_util: float = Field(0.8, gt=0, le=1)
    min_ecn: float = Field(0.01, gt=0, le=1, description="a standing queue somewhere: congestion")


class PauseWithoutLoad(DeviceRule):
    name = "buffer_misconfig"
    Options = BufferOptions
    driver = "pfc_tx_frames"
    symptom = PAUSE_WITHOUT_LOAD

    def __init__(self, instance: str, options: BufferOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options

    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        o = self.opts
        tx_share, tx_measured = pause_share(frame, at, "tx")
        rx_share, rx_measured = pause_share(frame, at, "rx")
        if not np.isfinite(tx_share).any():
            return DeviceVerdict(False, False)
        need_tx = np.where(tx_measured > 0, o.min_share, o.min_share_frames)
        need_rx = np.where(rx_measured > 0, o.min_share, o.min_share_frames)
        pausing_ports = np.nanmax(np.where(np.isfinite(tx_share), tx_share - need_tx, -1), axis=1)
        pausing = pausing_ports >= 0
        paused = (np.where(np.isfinite(rx_share), rx_share - need_rx, -1) >= 0).any()
        out_util = np.nan_to_num(tx_util(frame, at), nan=0.0)
        in_util = np.nan_to_num(rx_util(frame, at), nan=0.0)
        ecn = np.nan_to_num(ecn_fraction(frame, at), nan=0.0)
        loaded = bool((out_util >= o.max_util).any() or (in_util[pausing] >= o.max_util).any()
                      or (ecn >= o.min_ecn).any())
        share = float(np.nanmax(np.where(np.isfinite(tx_share), tx_share, 0.0)))
        ports = tuple(frame.ports.label(int(p)) for p in at.pids[pausing])
        evidence = {"pause_share": share, "ports_pausing": float(pausing.sum()),
                    "max_util": float(out_util.max(initial=0.0)),
                    "measured": float(tx_measured.max(initial=0.0))}
        bad = bool(pausing.any()) and not paused and not loaded
        return DeviceVerdict(bad, not pausing.any(), evidence, ports)
