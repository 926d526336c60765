"""Egress in the fluid model: how a port shares its line among priorities, and lossy tail drops.

A port's capacity is shared among its priorities by DWRR with equal weights, each priority only
getting the share of time it is not paused; a lossy queue beyond its limit drops from its tail in
proportion to what each entry holds. Pieces of :meth:`lab.physics.Physics.step`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lab.wiring import FloatArray, sum_by_key

if TYPE_CHECKING:
    from lab.physics import Physics

_EPS = 1e-9


def serve(dem: FloatArray, avail: FloatArray, cap: FloatArray, n_ports: int,
          n_act: int) -> FloatArray:
    """Bytes each (channel, priority) sends: DWRR with equal weights over unpaused time.

    ``dem``, ``avail`` and ``cap`` are flat over (port, active priority)."""
    lim = np.minimum(dem, avail)
    if n_act == 1:
        return lim
    na = n_act
    rows = lim.reshape(n_ports, na)
    c = cap.reshape(n_ports, na)[:, 0]
    over = rows.sum(axis=1) > c + _EPS
    if over.any():
        r = rows[over]
        s = np.sort(r, axis=1)
        prev = np.concatenate([np.zeros((len(s), 1)), np.cumsum(s, axis=1)[:, :-1]], axis=1)
        level = (c[over][:, None] - prev) / (na - np.arange(na))
        first = np.argmax(s >= level, axis=1)
        lam = level[np.arange(len(s)), first]
        rows[over] = np.minimum(r, lam[:, None])
    return lim


def tail_drop(ph: Physics, tier: int) -> None:
    """Drop what a lossy egress queue of ``tier`` holds beyond its limit."""
    m, k = ph._m[tier], ph._k[tier]
    n = ph.n_ports * ph.n_act
    qk = sum_by_key(k, ph.q[tier][m], n)
    over = np.where(ph._lossless_flat, 0.0,
                    np.maximum(qk - ph.buf.lossy_limit_bytes, 0.0))
    if over.any():
        fd = np.divide(over, qk, out=np.zeros(n), where=qk > 0)
        ph.q[tier][m] *= 1.0 - fd[k]
        ph.acc_dropped += over
