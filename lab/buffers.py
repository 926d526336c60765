"""Buffer, PFC and ECN settings of the simulated switches and NICs.

Defaults model a 400G shallow-buffer leaf/spine configured the way the RoCE literature recommends
(notes/anchors-papers.md §2): ECN starts marking (Kmin) well below the PFC XOFF threshold, so ECN
acts before PFC; lossless headroom absorbs what is in flight after XOFF is sent; a paused port is
re-paused every half pause-quanta while it stays in XOFF. Only priority 3 (RoCE) is lossless and
ECN-capable; every other priority is lossy and tail-drops at ``lossy_limit_bytes``.

In a three-tier fabric the spines are deep-buffer switches, as Meta's CTSW (notes/anchors-papers.md
§1.1: "deep buffers statically divided per port"): each spine ingress PG may hold
``deep_spine_xoff_bytes`` before it pauses, so bursts from the leaves and from the aggregation tier
are absorbed there and a spine persistently pausing a leaf is the anomaly the paper says it is.
Leaves (RTSW) and aggregation switches keep the shallow-buffer thresholds; two-tier fabrics are
shallow throughout, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pipeline.topology.model import SPINE

if TYPE_CHECKING:
    from lab.wiring import Wiring

PAUSE_QUANTUM_BITS = 512
MAX_PAUSE_QUANTA = 0xFFFF


@dataclass(frozen=True)
class BufferProfile:
    xoff_bytes: float = 400e3          # PG threshold at which a switch ingress sends XOFF
    xon_band_bytes: float = 64e3       # hysteresis: XON is sent this far below XOFF
    headroom_bytes: float = 200e3      # absorbs in-flight bytes after XOFF (cable + reaction)
    nic_xoff_bytes: float = 256e3      # a NIC's receive buffer level at which it pauses the leaf
    ecn_kmin_bytes: float = 50e3
    ecn_kmax_bytes: float = 2e6
    ecn_pmax: float = 0.2
    lossy_limit_bytes: float = 2e6     # tail-drop limit of a lossy egress queue
    burst_bytes: float = 8192.0        # mean micro-burst size behind the queue-length noise
    roce_frame_bytes: float = 4150.0   # 4096 B payload + Eth/IP/UDP/BTH/ICRC/FCS
    lossy_frame_bytes: float = 1500.0
    lossless: tuple[int, ...] = (3,)
    ecn_capable: tuple[int, ...] = (3,)
    deep_spine_xoff_bytes: float = 16e6   # a CTSW's per-port share of its deep buffer

    def switch_xoff(self, role: str | None, three_tier: bool) -> float:
        """The lossless PG threshold of a switch's ingress ports."""
        return self.deep_spine_xoff_bytes if three_tier and role == SPINE else self.xoff_bytes

    def frame_bytes(self, prio: int) -> float:
        """RoCE (the ECN-capable class) uses 4 KB MTU frames; everything else 1500 B."""
        return self.roce_frame_bytes if prio in self.ecn_capable else self.lossy_frame_bytes

    @staticmethod
    def pause_refresh_s(bps: float) -> float:
        """A paused port re-sends XOFF every half of the longest pause it can request."""
        return MAX_PAUSE_QUANTA * PAUSE_QUANTUM_BITS / bps / 2.0


def device_xoff(wiring: Wiring, buffers: BufferProfile) -> NDArray[np.float64]:
    """Per device (switches, then hosts): the XOFF threshold of its lossless ingress PGs (a
    NIC's is its receive buffer's)."""
    topo = wiring.topology
    three = topo.tiers == 3
    sw = [buffers.switch_xoff(topo.role(s), three) for s in wiring.switches]
    return np.asarray(sw + [buffers.nic_xoff_bytes] * len(wiring.hosts), dtype=np.float64)


def pg_xoff(wiring: Wiring, buffers: BufferProfile) -> NDArray[np.float64]:
    """Per channel: the XOFF threshold of the PG it feeds (that PG lives on the receiving
    device)."""
    return np.asarray(device_xoff(wiring, buffers)[wiring.port_device[wiring.peer]])
