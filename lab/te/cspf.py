"""Constrained shortest path first over a Clos of AI zones: widest feasible path per (flow, QP).

Every path between two leaves of a zone has the same hop count, and so has every path between two
zones, so "shortest" leaves a choice at each hop (spine and parallel link; across zones also the
aggregation switch, the destination zone's spine and their parallel links); the constraint is
residual capacity. Entries are placed heaviest first (ties by entry order, which keeps a flow's
QPs together so they spread over distinct paths); each takes, among the paths whose links are
usable, the one whose bottleneck residual capacity is largest, and consumes its demand there. The
widest path is found backwards from the destination, one hop at a time (the widest way down from
each destination spine, then from each aggregation switch, then from each source spine), which is
exact for bottlenecks. Where no path is usable the entry is left to ECMP fallback (-1).
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
    down: IntArray          # per entry: parallel link index at the last spine, -1 = none
    load: FloatArray        # per channel: planned bytes/s
    up: IntArray | None = None     # per entry: the spine's aggregation member, -1 = none
    agg: IntArray | None = None    # per entry: the aggregation switch's member, -1 = none

    def te_paths(self) -> tuple[IntArray, ...]:
        """What the simulation's ``set_te_paths`` takes."""
        if self.up is None or self.agg is None:
            return (self.member, self.down)
        return (self.member, self.down, self.up, self.agg)


def usable_matrix(wiring: Wiring, usable_link: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """[leaf, spine of its zone]: at least one usable parallel link between them."""
    w = wiring
    up = np.asarray(usable_link)[w.port_link[w.leaf_uplinks]]                       # (L, S*upp)
    return np.asarray(up.reshape(w.n_leaves, w.spines_per_zone, w.uplinks_per_pair).any(axis=2))


def isolates(wiring: Wiring, usable_link: NDArray[np.bool_]) -> str | None:
    """A description of the first leaf, zone or leaf pair left without any path, or None."""
    w = wiring
    m = usable_matrix(w, usable_link)
    leaves = w.topology.leaves
    for i in np.flatnonzero(~m.any(axis=1)).tolist():
        return f"would isolate {leaves[i]} (no usable uplink left)"
    zone = w.leaf_zone(np.arange(w.n_leaves))
    glob = np.zeros((w.n_leaves, w.n_spines), dtype=np.int64)     # [leaf, global spine]
    cols = w.zone_spines(zone)
    glob[np.arange(w.n_leaves)[:, None], cols] = m
    same = zone[:, None] == zone[None, :]
    reach = ((glob @ glob.T) > 0) | ~same
    if w.n_aggs and w.n_zones > 1:
        up = np.asarray(usable_link)[w.port_link[w.spine_uplinks]].reshape(
            w.n_spines, w.n_aggs, w.agg_uplinks_per_spine).any(axis=2).astype(np.int64)
        to_agg = (glob @ up) > 0                                   # [leaf, agg]
        for z in range(w.n_zones):
            if not to_agg[zone == z].any():
                return f"would cut zone z{z + 1} off the aggregation tier"
        cross = (to_agg.astype(np.int64) @ to_agg.T.astype(np.int64)) > 0
        reach &= cross | same
    for i, j in zip(*np.nonzero(~reach), strict=True):
        if i < j:
            return f"would leave no path between {leaves[i]} and {leaves[j]}"
    return None


def plan_paths(wiring: Wiring, entries: EntryTable, demand: FloatArray,
               usable_link: NDArray[np.bool_]) -> Plan:
    w = wiring
    n = len(entries)
    upp, aupp = w.uplinks_per_pair, w.agg_uplinks_per_spine
    n_sp = w.spines_per_zone
    member = np.full(n, -1, dtype=np.int64)
    down = np.full(n, -1, dtype=np.int64)
    up = np.full(n, -1, dtype=np.int64)
    agg = np.full(n, -1, dtype=np.int64)
    residual = np.where(usable_link[w.port_link], w.bps / 8.0, -np.inf)
    load = np.zeros(w.n_ports)
    inter = np.flatnonzero((entries.src_leaf != entries.dst_leaf) & (demand > 0))
    order = inter[np.lexsort((inter, -demand[inter]))]
    spine_of = np.arange(w.leaf_uplinks.shape[1]) // upp
    src_zone = w.leaf_zone(entries.src_leaf)
    dst_zone = w.leaf_zone(entries.dst_leaf)
    dst_local = w.leaf_local(entries.dst_leaf)
    agg_of = np.arange(w.spine_uplinks.shape[1]) // aupp
    zone_member_spine = np.arange(n_sp * aupp) // aupp
    zone_member_k = np.arange(n_sp * aupp) % aupp
    for e in order.tolist():
        sl, dl, zs, zd = (int(entries.src_leaf[e]), int(dst_local[e]), int(src_zone[e]),
                          int(dst_zone[e]))
        d = float(demand[e])
        ups = w.leaf_uplinks[sl]                                       # (members,)
        # the widest way down from each spine of the destination zone to the destination leaf
        dst_spines = zd * n_sp + np.arange(n_sp)
        downs = w.spine_downlinks[dst_spines, dl, :]                   # (spines, upp)
        down_res = residual[downs]
        best_k = np.argmax(down_res, axis=1)
        best_down = down_res[np.arange(n_sp), best_k]
        if zs == zd:
            score = np.minimum(residual[ups], best_down[spine_of])
            m = int(np.argmax(score))
            if not np.isfinite(score[m]):
                continue
            s = int(spine_of[m])
            path = [ups[m], downs[s, best_k[s]]]
            member[e], down[e] = m, int(best_k[s])
        else:
            # from each aggregation switch: into the destination zone, then down
            agg_ports = w.agg_downlinks[:, dst_spines[zone_member_spine], zone_member_k]  # (A, M)
            via = np.minimum(residual[agg_ports], best_down[zone_member_spine][None, :])
            best_m3 = np.argmax(via, axis=1)
            best_agg = via[np.arange(w.n_aggs), best_m3]               # (A,)
            # from each source spine: up to an aggregation switch
            src_spines = zs * n_sp + np.arange(n_sp)
            up_ports = w.spine_uplinks[src_spines]                     # (S, A * aupp)
            via_up = np.minimum(residual[up_ports], best_agg[agg_of][None, :])
            best_m2 = np.argmax(via_up, axis=1)
            best_up = via_up[np.arange(n_sp), best_m2]
            score = np.minimum(residual[ups], best_up[spine_of])
            m = int(np.argmax(score))
            if not np.isfinite(score[m]):
                continue
            s = int(spine_of[m])
            m2 = int(best_m2[s])
            a = int(agg_of[m2])
            m3 = int(best_m3[a])
            s2 = int(zone_member_spine[m3])
            k4 = int(best_k[s2])
            path = [ups[m], up_ports[s, m2], agg_ports[a, m3], downs[s2, k4]]
            member[e], up[e], agg[e], down[e] = m, m2, m3, k4
        for port in path:
            residual[port] -= d
            load[port] += d
    three = w.n_aggs > 0
    return Plan(member, down, load, up if three else None, agg if three else None)
