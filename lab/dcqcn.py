"""A fluid DCQCN-like reaction point: senders slow down when ECN marks their bytes.

Per step, an entry's marked fraction is ``1 - prod(1 - p_hop)`` over the egress queues on its path,
``p_hop`` the RED marking probability of the queue (Kmin/Kmax/Pmax); its rate factor is cut
multiplicatively in proportion and recovers additively while unmarked. DCQCN's own timescales
(tens of microseconds) are far below the step, so this is its average behaviour, tuned on a 3:1
incast to cut PFC frames ~5x while the bottleneck stays above 90% busy. Off by default: Meta ran
its 400G fabric PFC-only (notes/anchors-papers.md §1.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from lab.physics import Physics

CUT = 0.3               # largest multiplicative cut per step
GAIN = 5.0              # marked fraction (x gain) that triggers the full cut
RECOVER_PER_S = 2.0     # additive recovery of the rate factor per second unmarked
FLOOR = 0.01


def react(ph: Physics, queue: NDArray[np.float64]) -> None:
    """Update ``ph.rate_factor`` from this step's egress queues (flat per channel and prio)."""
    buf = ph.buf
    slope = buf.ecn_pmax / (buf.ecn_kmax_bytes - buf.ecn_kmin_bytes)
    p = np.where(queue >= buf.ecn_kmax_bytes, 1.0,
                 np.maximum(queue - buf.ecn_kmin_bytes, 0.0) * slope) * ph.ecn_slot
    clear = np.ones(len(ph.prio))
    for tier, (m, k) in enumerate(ph.tiers()):
        if tier and m.size:
            clear[m] *= 1.0 - p[k]
    marked = 1.0 - clear
    rf = ph.rate_factor
    rf *= 1.0 - CUT * np.minimum(marked * GAIN, 1.0)
    rf += (marked <= 0.0) * RECOVER_PER_S * ph.dt
    np.clip(rf, FLOOR, 1.0, out=rf)
