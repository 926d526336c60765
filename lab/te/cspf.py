"""Constrained shortest path first over a two-tier Clos: widest feasible path per (flow, QP).

Every inter-leaf path has the same hop count, so "shortest" leaves a choice of spine and parallel
links; the constraint is residual capacity. Entries are placed heaviest first (ties by entry
order, which keeps a flow's QPs together so they spread over distinct paths); each takes, among
the paths whose links are usable, the one whose bottleneck residual capacity is largest, and
consumes its demand there. Where no path is usable the entry is left to ECMP fallback (-1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lab.traffic import EntryTable
from lab.wiring import FloatArray, IntArray, Wiring


@dataclass(frozen=True)
class Plan:
    member: IntArray        # per entry: source leaf's ECMP member (spine * upp + k), -1 = none
    down: IntArray          # per entry: parallel link index at the spine, -1 = none
    load: FloatArray        # per channel: planned bytes/s


def usable_matrix(wiring: Wiring, usable_link: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """[leaf, spine]: at least one usable parallel link between them."""
    w = wiring
    up = np.asarray(usable_link)[w.port_link[w.leaf_uplinks]]                       # (L, S*upp)
    return np.asarray(up.reshape(w.n_leaves, w.n_spines, w.uplinks_per_pair).any(axis=2))


def isolates(wiring: Wiring, usable_link: NDArray[np.bool_]) -> str | None:
    """A description of the first leaf pair left without any path, or None."""
    m = usable_matrix(wiring, usable_link)
    leaves = wiring.topology.leaves
    for i in np.flatnonzero(~m.any(axis=1)).tolist():
        return f"would isolate {leaves[i]} (no usable uplink left)"
    reach = (m.astype(np.int64) @ m.T.astype(np.int64)) > 0              # (L, L)
    for i, j in zip(*np.nonzero(~reach), strict=True):
        if i < j:
            return f"would leave no path between {leaves[i]} and {leaves[j]}"
    return None


def plan_paths(wiring: Wiring, entries: EntryTable, demand: FloatArray,
               usable_link: NDArray[np.bool_]) -> Plan:
    w = wiring
    n = len(entries)
    upp = w.uplinks_per_pair
    member = np.full(n, -1, dtype=np.int64)
    down = np.full(n, -1, dtype=np.int64)
    residual = np.where(usable_link[w.port_link], w.bps / 8.0, -np.inf)
    load = np.zeros(w.n_ports)
    inter = np.flatnonzero((entries.src_leaf != entries.dst_leaf) & (demand > 0))
    order = inter[np.lexsort((inter, -demand[inter]))]
    spine_of = np.arange(w.leaf_uplinks.shape[1]) // upp
    for e in order.tolist():
        sl, dl = int(entries.src_leaf[e]), int(entries.dst_leaf[e])
        ups = w.leaf_uplinks[sl]                                       # (members,)
        downs = w.spine_downlinks[:, dl, :]                            # (spines, upp)
        down_res = residual[downs]
        best_k = np.argmax(down_res, axis=1)                           # per spine
        best_down = down_res[np.arange(len(best_k)), best_k]
        score = np.minimum(residual[ups], best_down[spine_of])
        m = int(np.argmax(score))
        if not np.isfinite(score[m]):
            continue
        s = int(spine_of[m])
        k = int(best_k[s])
        d = float(demand[e])
        member[e], down[e] = m, k
        residual[ups[m]] -= d
        residual[downs[s, k]] -= d
        load[ups[m]] += d
        load[downs[s, k]] += d
    return Plan(member, down, load)
