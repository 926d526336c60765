"""Path selection: which member of each ECMP group every (flow, QP) entry takes, hop by hop.

A path inside a zone is host -> source leaf -> spine -> destination leaf -> host: routing picks
the source leaf's member (spine and parallel link) and the spine's parallel link down. A path
across zones climbs to the aggregation tier: host -> leaf -> spine (source zone) -> aggregation
switch -> spine (destination zone) -> leaf -> host, with two more groups, the spine's aggregation
uplinks (aggregation switch and parallel link) and the aggregation switch's links into the
destination zone (spine and parallel link). Modes, at every hop:

* ``ecmp``: each switch hashes the 5-tuple with its own seed (no polarization between tiers).
* ``eecmp``: the same hash with the destination QP number mixed in (RoCE UDF hashing).
* ``pinned``: static per destination host (a member is a function of the destination index).
* ``te``: the members the TE controller programmed; until it has, or where its path is unusable,
  the switch falls back to E-ECMP (as Meta's TE falls back to ECMP routes).

A member is usable when its link is up and not drained and the switch it leads to can still
reach the destination leaf (a spine through its downlink, or across zones through an aggregation
switch with a usable way down). Groups are resilient: entries on a usable member keep it; entries
whose member died are rehashed over the survivors. An ``ecmp_collision`` fault pins the heaviest
flows of a leaf onto one uplink, or of a spine onto one aggregation uplink, as a degenerate hash
would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from lab.traffic import ROCE_DPORT, EntryTable, FlowTable, host_ip
from lab.wiring import (
    N_TIERS,
    TIER_AGG_DOWN,
    TIER_HOST_UP,
    TIER_LEAF_DOWN,
    TIER_LEAF_UP,
    TIER_SPINE_DOWN,
    TIER_SPINE_UP,
    IntArray,
    Wiring,
)

U64 = NDArray[np.uint64]
_UDP = 17


def mix64(x: U64) -> U64:
    """The splitmix64 finaliser: a cheap, well-mixed 64-bit hash, vectorised."""
    z = x.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def hash_fields(cols: list[IntArray], salt: U64 | int) -> U64:
    h = np.full(len(cols[0]), np.uint64(0x9E3779B97F4A7C15)) ^ np.asarray(salt, dtype=np.uint64)
    for col in cols:
        h = mix64(h ^ col.astype(np.uint64))
    return h


@dataclass
class RouteInputs:
    """What the routes depend on besides the traffic: link state, TE paths, collisions."""

    usable_link: NDArray[np.bool_]
    te_member: IntArray | None = None          # per entry: leaf member, -1 = none
    te_down: IntArray | None = None            # per entry: parallel link down to the leaf
    collisions: list[tuple[int, int]] = field(default_factory=list)   # (leaf index, flows)
    te_up: IntArray | None = None              # per entry: spine's aggregation member
    te_agg: IntArray | None = None             # per entry: aggregation switch's member
    spine_collisions: list[tuple[int, int]] = field(default_factory=list)  # (spine, flows)


@dataclass
class _Reach:
    """Which switch can still reach which leaf over usable links (booleans)."""

    down: NDArray[np.bool_]     # (spines, leaves per zone): a usable link down to the leaf
    up: NDArray[np.bool_]       # (spines, aggs): a usable link between them
    agg: NDArray[np.bool_]      # (aggs, leaves): through a spine of the leaf's zone
    cross: NDArray[np.bool_]    # (spines, leaves): through an aggregation switch


_UP_MIX = np.uint64(0xD6E8FEB86659FD93)
_AGG_MIX = np.uint64(0xA0761D6478BD642F)


class Router:
    def __init__(self, wiring: Wiring, flows: FlowTable, entries: EntryTable, mode: str,
                 seed: int) -> None:
        self.wiring = wiring
        self.flows = flows
        self.entries = entries
        self.mode = mode
        n_up = wiring.leaf_uplinks.shape[1]
        self.n_members = n_up
        self.n_agg_members = wiring.spine_uplinks.shape[1]
        self.n_zone_members = wiring.spines_per_zone * wiring.agg_uplinks_per_spine
        rng = np.random.default_rng([seed, 29])
        self._leaf_salt = rng.integers(0, 2**63, size=wiring.n_leaves, dtype=np.int64)
        self._spine_salt = rng.integers(0, 2**63, size=wiring.n_spines, dtype=np.int64)
        self._hot_member = rng.integers(0, n_up, size=wiring.n_leaves)
        # drawn apart so that two-tier fabrics route exactly as before aggregation tiers existed
        rng3 = np.random.default_rng([seed, 31])
        self._agg_salt = rng3.integers(0, 2**63, size=max(1, wiring.n_aggs), dtype=np.int64)
        self._hot_agg_member = rng3.integers(0, max(1, self.n_agg_members),
                                             size=wiring.n_spines)
        e = entries
        f = flows
        tuple5 = [host_ip(e.src), host_ip(e.dst), np.full(len(e), _UDP, dtype=np.int64),
                  f.sport[e.flow], np.full(len(e), ROCE_DPORT, dtype=np.int64)]
        # E-ECMP hashing is the default fallback in te mode too
        keys = [*tuple5, e.dst_qpn] if mode in ("eecmp", "te") else tuple5
        self._keys = keys
        self._h_leaf = hash_fields(keys, self._leaf_salt[e.src_leaf].astype(np.uint64))
        self._inter = e.src_leaf != e.dst_leaf
        self._src_zone = wiring.leaf_zone(e.src_leaf)
        self._dst_zone = wiring.leaf_zone(e.dst_leaf)
        self._dst_local = wiring.leaf_local(e.dst_leaf)
        self._cross = self._src_zone != self._dst_zone
        if mode == "pinned":
            self._pref_member = e.dst % n_up
            self._pref_down = (e.dst // n_up) % wiring.uplinks_per_pair
        else:
            self._pref_member = (self._h_leaf % np.uint64(n_up)).astype(np.int64)
            self._pref_down = np.zeros(len(e), dtype=np.int64)
        self._flow_rank = self._rank_flows_per_leaf()

    def routes(self, inputs: RouteInputs) -> tuple[IntArray, NDArray[np.bool_]]:
        """Channels per entry and tier (-1 where a path skips a tier), and which entries route."""
        w, e = self.wiring, self.entries
        n = len(e)
        ch = np.full((n, N_TIERS), -1, dtype=np.int64)
        ch[:, TIER_HOST_UP] = w.host_nic[e.src]
        ch[:, TIER_LEAF_DOWN] = w.host_leaf_port[e.dst]
        routable = np.ones(n, dtype=bool)
        idx = np.flatnonzero(self._inter)
        if not len(idx):
            return ch, routable
        usable = np.asarray(inputs.usable_link, dtype=bool)
        reach = self._reach(usable)
        upp = w.uplinks_per_pair
        src_leaf, dst_local = e.src_leaf[idx], self._dst_local[idx]
        cross = self._cross[idx]
        up_ports = w.leaf_uplinks[src_leaf]                              # (k, members)
        up_ok = usable[w.port_link[up_ports]]
        spine_of_member = np.arange(self.n_members) // upp
        cand = w.zone_spines(self._src_zone[idx])                        # (k, spines per zone)
        spine_ok = np.where(cross[:, None], reach.cross[cand, e.dst_leaf[idx][:, None]],
                            reach.down[cand, dst_local[:, None]])
        member_ok = up_ok & spine_ok[:, spine_of_member]
        pref = self._pref_member[idx].copy()
        if self.mode == "te" and inputs.te_member is not None:
            te = inputs.te_member[idx]
            pref = np.where(te >= 0, te, pref)
        for leaf, count in inputs.collisions:
            hot = (src_leaf == leaf) & (self._flow_rank[idx] < count)
            pref[hot] = self._hot_member[leaf]
        h2 = mix64(self._h_leaf[idx] ^ np.uint64(0x5851F42D4C957F2D))
        member = _choose(pref, member_ok, h2)
        ok = member >= 0
        member = np.where(ok, member, 0)
        spine = cand[np.arange(len(idx)), spine_of_member[member]]       # global spine index
        h_spine = hash_fields(self._keys_at(idx), self._spine_salt[spine].astype(np.uint64))
        ch[idx, TIER_LEAF_UP] = up_ports[np.arange(len(idx)), member]
        down_spine = spine.copy()
        h_down = h_spine
        c = np.flatnonzero(cross & ok)
        if c.size:
            down_spine[c], h_down_c, ok_c = self._across(idx[c], spine[c], h_spine[c], reach,
                                                         usable, inputs, ch)
            h_down = h_spine.copy()
            h_down[c] = h_down_c
            ok[c] &= ok_c
        pref_down = (h_down % np.uint64(upp)).astype(np.int64)
        if self.mode == "pinned":
            pref_down = self._pref_down[idx]
        if self.mode == "te" and inputs.te_down is not None:
            td = inputs.te_down[idx]
            pref_down = np.where(td >= 0, td, pref_down)
        down_ports = w.spine_downlinks[down_spine, dst_local, :]         # (k, upp)
        k_ok = usable[w.port_link[down_ports]]
        down = _choose(pref_down, k_ok, mix64(h_down))
        ok &= down >= 0
        routable[idx] = ok
        ch[idx, TIER_SPINE_DOWN] = down_ports[np.arange(len(idx)), np.maximum(down, 0)]
        ch[idx[~ok], 1:N_TIERS - 1] = -1
        return ch, routable

    def _across(self, ent: IntArray, spine: IntArray, h_spine: U64, reach: _Reach,
                usable: NDArray[np.bool_], inputs: RouteInputs, ch: IntArray
                ) -> tuple[IntArray, U64, NDArray[np.bool_]]:
        """The two hops through the aggregation tier of cross-zone entries ``ent`` leaving
        through ``spine``; returns the destination zone's spine, its hash and which routed."""
        w, e = self.wiring, self.entries
        k = len(ent)
        rows = np.arange(k)
        aupp = w.agg_uplinks_per_spine
        dst_leaf = e.dst_leaf[ent]
        # the spine's aggregation uplinks
        up_ports = w.spine_uplinks[spine]                                # (k, aggs * aupp)
        agg_of_member = np.arange(self.n_agg_members) // aupp
        ok_up = usable[w.port_link[up_ports]] & reach.agg[agg_of_member[None, :],
                                                          dst_leaf[:, None]]
        h_up = mix64(h_spine ^ _UP_MIX)
        if self.mode == "pinned":
            pref = (e.dst[ent] // self.n_members) % self.n_agg_members
        else:
            pref = (h_up % np.uint64(self.n_agg_members)).astype(np.int64)
        if self.mode == "te" and inputs.te_up is not None:
            pref = np.where(inputs.te_up[ent] >= 0, inputs.te_up[ent], pref)
        for sp, count in inputs.spine_collisions:
            here = np.flatnonzero(spine == sp)
            if here.size:
                hot = _heaviest(e.flow[ent[here]], self.flows.bps, count)
                pref[here[hot]] = self._hot_agg_member[sp]
        m_up = _choose(pref, ok_up, mix64(h_up))
        ok = m_up >= 0
        m_up = np.maximum(m_up, 0)
        agg = agg_of_member[m_up]
        ch[ent, TIER_SPINE_UP] = up_ports[rows, m_up]
        # the aggregation switch's links into the destination zone
        zone_sp = w.zone_spines(self._dst_zone[ent])                    # (k, spines per zone)
        member_sp = zone_sp[:, np.arange(self.n_zone_members) // aupp]   # (k, zone members)
        member_k = np.arange(self.n_zone_members) % aupp
        agg_ports = w.agg_downlinks[agg[:, None], member_sp, member_k[None, :]]
        ok_agg = usable[w.port_link[agg_ports]] & reach.down[member_sp,
                                                             self._dst_local[ent][:, None]]
        h_agg = hash_fields(self._keys_at(ent), self._agg_salt[agg].astype(np.uint64))
        if self.mode == "pinned":
            pref = e.dst[ent] % self.n_zone_members
        else:
            pref = (h_agg % np.uint64(self.n_zone_members)).astype(np.int64)
        if self.mode == "te" and inputs.te_agg is not None:
            pref = np.where(inputs.te_agg[ent] >= 0, inputs.te_agg[ent], pref)
        m_agg = _choose(pref, ok_agg, mix64(h_agg ^ _AGG_MIX))
        ok &= m_agg >= 0
        m_agg = np.maximum(m_agg, 0)
        ch[ent, TIER_AGG_DOWN] = agg_ports[rows, m_agg]
        dst_spine = member_sp[rows, m_agg]
        h_dst = hash_fields(self._keys_at(ent), self._spine_salt[dst_spine].astype(np.uint64))
        return dst_spine, h_dst, ok

    def _reach(self, usable: NDArray[np.bool_]) -> _Reach:
        w = self.wiring
        down = np.asarray(usable[w.port_link[w.spine_downlinks]].any(axis=2))  # (spines, Lz)
        n_aggs, aupp = w.n_aggs, w.agg_uplinks_per_spine
        if not n_aggs:
            empty = np.zeros((w.n_spines, 0), dtype=bool)
            return _Reach(down, empty, np.zeros((0, w.n_leaves), dtype=bool),
                          np.zeros((w.n_spines, w.n_leaves), dtype=bool))
        up = np.asarray(usable[w.port_link[w.spine_uplinks]].reshape(w.n_spines, n_aggs, aupp)
                        .any(axis=2))
        s, z = w.spines_per_zone, w.n_zones
        # (aggs, zones, spines) @ (zones, spines, Lz) per zone -> (aggs, leaves)
        by_zone = up.T.reshape(n_aggs, z, s).astype(np.int64)
        down_z = down.reshape(z, s, w.leaves_per_zone).astype(np.int64)
        agg = np.einsum("azs,zsl->azl", by_zone, down_z).reshape(n_aggs, w.n_leaves) > 0
        cross = (up.astype(np.int64) @ agg.astype(np.int64)) > 0         # (spines, leaves)
        return _Reach(down, up, agg, cross)

    def _keys_at(self, idx: IntArray) -> list[IntArray]:
        return [k[idx] for k in self._keys]

    def _rank_flows_per_leaf(self) -> IntArray:
        """Per entry: its flow's rank among the inter-leaf flows leaving its leaf (heaviest 0)."""
        f, e = self.flows, self.entries
        leaf = self.wiring.host_leaf[f.src]
        inter = leaf != self.wiring.host_leaf[f.dst]
        order = np.lexsort((np.arange(len(f)), -f.bps, leaf))
        rank = np.full(len(f), np.iinfo(np.int64).max, dtype=np.int64)
        counts: dict[int, int] = {}
        for fi in order.tolist():
            if inter[fi]:
                lf = int(leaf[fi])
                rank[fi] = counts.get(lf, 0)
                counts[lf] = rank[fi] + 1
        return rank[e.flow]


def _heaviest(flow: IntArray, bps: NDArray[np.float64], count: int) -> NDArray[np.bool_]:
    """Which of these entries belong to the ``count`` heaviest flows among them (ties: lower
    flow index first)."""
    flows = np.unique(flow)
    order = flows[np.lexsort((flows, -bps[flows]))][:count]
    return np.isin(flow, order)


def _choose(pref: IntArray, ok: NDArray[np.bool_], h: U64) -> IntArray:
    """Keep the preferred member where usable, else rehash over the usable ones (-1 if none)."""
    rows = np.arange(len(pref))
    keep = ok[rows, pref]
    count = ok.sum(axis=1)
    nth = (h % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
    rank = np.cumsum(ok, axis=1) - 1
    alt = np.argmax(ok & (rank == nth[:, None]), axis=1)
    return np.where(keep, pref, np.where(count > 0, alt, -1))
