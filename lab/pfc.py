"""PFC in the fluid model: the backward pass of a step of :class:`lab.physics.Physics`.

Sink to tier 0: a priority group (PG) is the bytes that arrived through one channel and still sit
in the next switch (or in the receiving NIC). Wherever a lossless PG ends the step above its XOFF
threshold, the excess it received *this step* is handed back to the upstream queue: the upstream
was paused for that part of the step. Handing back cascades hop by hop to the senders, which is
how congestion spreads. Lossy queues never pause; they tail-drop.

Then each channel's pause fraction for the next step is estimated from what its PG could accept
(drained + free room) against what the channel would have sent unpaused, and applied to *every*
entry on that channel and priority: victims share the pause with the culprits (head-of-line
blocking), and a PG that never drains converges to a full pause. Because the hand-back bounds every
PG at XOFF whatever ``dt`` is, the model stays stable from microsecond steps (where transients are
visible) to the 10 ms steps the lab runs at (where the queues sit at their equilibria).

These functions are pieces of :meth:`Physics.step`: they read and update that step's state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lab.wiring import TIER_LEAF_DOWN, FloatArray, sum_by_key

if TYPE_CHECKING:
    from lab.physics import Physics

_TINY = 1e-30


def sink(ph: Physics, cap: FloatArray, moved: list[FloatArray], arr: FloatArray,
         tx: FloatArray) -> FloatArray:
    """Receiving NICs: buffer, drain at (a fraction of) line rate, pause the leaf when full."""
    m = ph._m[TIER_LEAF_DOWN]
    n = ph.n_ports * ph.n_act
    if not m.size:
        return ph.nicbuf.copy()
    k = ph._k[TIER_LEAF_DOWN]
    inflow = sum_by_key(k, arr[m], n)
    drain = cap * ph._rx_drain
    ph._floor += np.maximum(ph.nicbuf - drain, 0.0)
    buf = ph.nicbuf + inflow
    buf -= np.minimum(buf, drain)
    over = np.maximum(buf - ph._xoff, 0.0)
    if ph._has_lossy:
        lossy_over = over * ph._lossy_f
        ph.acc_nic_drop += lossy_over
        buf -= lossy_over
    excess = over * ph._lossless_f
    if excess.max() > 0.0:
        r = np.minimum(1.0, excess / np.maximum(inflow, _TINY))
        back = arr[m] * r[k]
        ph.q[TIER_LEAF_DOWN][m] += back
        moved[TIER_LEAF_DOWN][m] -= back
        arr[m] -= back
        back_k = sum_by_key(k, back, n)
        tx -= back_k
        buf = np.maximum(buf - back_k, 0.0)
    ph.nicbuf = buf
    if ph._finite:
        ph.delivered[m] += arr[m]
    return buf.copy()


def hand_back(ph: Physics, up_tier: int, moved: list[FloatArray], lost: list[FloatArray],
              tx: FloatArray) -> FloatArray:
    """PFC for the PGs fed by ``up_tier`` channels: return their excess to the upstream."""
    m = ph._m[up_tier]
    n = ph.n_ports * ph.n_act
    if not m.size:
        return np.zeros(n)
    k = ph._k[up_tier]
    groups = ph.next_hops(up_tier)
    # the PG holds what these entries queue at their next hop, whichever tier that is
    held = np.zeros(m.size)
    old = np.zeros(m.size)
    for nt, sel in groups:
        mm = m[sel]
        held[sel] = ph.q[nt][mm]
        old[sel] = ph._held0[nt][mm] * (1.0 - ph._served[nt][mm])
    ph._floor += sum_by_key(k, old, n)
    pg = sum_by_key(k, held, n)
    excess = np.maximum(pg - ph._xoff, 0.0) * ph._lossless_f
    if excess.max() <= 0.0:
        return pg
    arrived = np.maximum(moved[up_tier][m] - lost[up_tier][m], 0.0)
    reflectable = np.minimum(held, arrived)
    total = sum_by_key(k, reflectable, n)
    r = np.minimum(1.0, excess / np.maximum(total, _TINY))
    back = reflectable * r[k]
    for nt, sel in groups:
        ph.q[nt][m[sel]] -= back[sel]
    if up_tier:
        ph.q[up_tier][m] += back
    moved[up_tier][m] -= back
    back_k = sum_by_key(k, back, n)
    tx -= back_k
    return pg - back_k


def estimate_pause(ph: Physics, demand: FloatArray, cap: FloatArray, sent: FloatArray,
                   inflow: FloatArray, pg_end: FloatArray) -> None:
    """Pause fractions for the next step, and the pause time and PFC frames of this one.

    A channel that ends the step still holding more than a frame of what it wanted to send
    was backlogged all step: a work-conserving port with data never idles, so whatever part of
    the step it did not spend sending it spent paused (``1 - sent / line rate``), even when
    what it held was less than a full step's worth of line rate."""
    dt = ph.dt
    xoff = ph._xoff
    potential = np.minimum(demand, cap)
    busy = (potential > 1.0) * ph._lossless_f
    inv = busy / np.maximum(potential, 1.0)
    drained = np.maximum(ph.pg + inflow - pg_end, 0.0)
    allowed = drained + np.maximum(xoff - pg_end, 0.0)
    # a PG in XOFF that would stay above XON even with its upstream silent never releases
    # the pause, however much traffic passes through it (a storm's stuck bytes)
    stuck = ((ph.pg >= xoff * (1.0 - 1e-9)) & (ph._floor >= xoff - ph._band)
             ) * ph._lossless_f
    ph.phi = np.maximum(np.maximum(1.0 - allowed * inv, 0.0) * busy, stuck)
    ph.pg = pg_end
    asserting = (pg_end >= xoff - ph._band) * ph._lossless_f
    backlogged = demand - sent > ph._frame_flat
    potential = np.where(backlogged, cap, potential)
    inv = busy / np.maximum(potential, 1.0)
    # asserting with nothing upstream to pause still means XOFF all along
    eff = asserting * np.where(busy > 0, np.maximum(1.0 - inflow * inv, 0.0), 1.0)
    eff = np.maximum(eff, ph._forced)
    eff = np.maximum(eff, busy * ph._forced_busy)
    eff *= ph._up_flat
    full = eff >= 0.999
    # entering and leaving a full pause sends an XOFF and an XON (visible at fine steps)
    ph.acc_frames += full != ph._was_full
    ph._was_full = full
    if eff.max() <= 0.0:
        return
    rate_u = potential / dt
    rate_d = np.minimum(inflow / dt, rate_u)
    partial = (eff > 0.0) & ~full
    cycles = partial * rate_d * (rate_u - rate_d) / (ph._band * np.maximum(rate_u, 1.0)) * dt
    # XOFF/XON cycles shorter than the step are counted here; longer ones show up as the
    # explicit transitions above (at microsecond steps)
    ph.acc_frames += 2.0 * cycles * (cycles >= 1.0) + eff * dt / ph._refresh_flat
    ph.acc_pause_s += eff * dt
