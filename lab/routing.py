"""Path selection: which uplink and which spine downlink each (flow, QP) entry takes.

Every inter-leaf path is host -> source leaf -> spine -> destination leaf -> host; routing picks the
source leaf's ECMP member (spine and parallel link) and the spine's parallel link down. Modes:

* ``ecmp``: each switch hashes the 5-tuple with its own seed (no polarization between tiers).
* ``eecmp``: the same hash with the destination QP number mixed in (RoCE UDF hashing).
* ``pinned``: static per destination host (member = destination index mod group size).
* ``te``: the member and downlink the TE controller programmed; until it has, or where its path
  is unusable, the switch falls back to E-ECMP (as Meta's TE falls back to ECMP routes).

A member is usable when its uplink is up and not drained and its spine still has a usable link to
the destination leaf. Groups are resilient: entries on a usable member keep it; entries whose
member died are rehashed over the survivors. An ``ecmp_collision`` fault pins the heaviest flows of
a leaf onto one member, as a degenerate hash would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from lab.traffic import ROCE_DPORT, EntryTable, FlowTable, host_ip
from lab.wiring import N_TIERS, IntArray, Wiring

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
    te_member: IntArray | None = None          # per entry, -1 = none
    te_down: IntArray | None = None            # per entry parallel index at the spine, -1 = none
    collisions: list[tuple[int, int]] = field(default_factory=list)   # (leaf index, flows)


class Router:
    def __init__(self, wiring: Wiring, flows: FlowTable, entries: EntryTable, mode: str,
                 seed: int) -> None:
        self.wiring = wiring
        self.flows = flows
        self.entries = entries
        self.mode = mode
        n_up = wiring.leaf_uplinks.shape[1]
        self.n_members = n_up
        rng = np.random.default_rng([seed, 29])
        self._leaf_salt = rng.integers(0, 2**63, size=wiring.n_leaves, dtype=np.int64)
        self._spine_salt = rng.integers(0, 2**63, size=wiring.n_spines, dtype=np.int64)
        self._hot_member = rng.integers(0, n_up, size=wiring.n_leaves)
        e = entries
        f = flows
        tuple5 = [host_ip(e.src), host_ip(e.dst), np.full(len(e), _UDP, dtype=np.int64),
                  f.sport[e.flow], np.full(len(e), ROCE_DPORT, dtype=np.int64)]
        # E-ECMP hashing is the default fallback in te mode too
        keys = [*tuple5, e.dst_qpn] if mode in ("eecmp", "te") else tuple5
        self._keys = keys
        self._h_leaf = hash_fields(keys, self._leaf_salt[e.src_leaf].astype(np.uint64))
        self._inter = e.src_leaf != e.dst_leaf
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
        ch[:, 0] = w.host_nic[e.src]
        ch[:, 3] = w.host_leaf_port[e.dst]
        routable = np.ones(n, dtype=bool)
        idx = np.flatnonzero(self._inter)
        if not len(idx):
            return ch, routable
        usable = np.asarray(inputs.usable_link, dtype=bool)
        upp = w.uplinks_per_pair
        src_leaf, dst_leaf = e.src_leaf[idx], e.dst_leaf[idx]
        up_ports = w.leaf_uplinks[src_leaf]                              # (k, members)
        up_ok = usable[w.port_link[up_ports]]
        spine_of_member = np.arange(self.n_members) // upp
        down_ports = w.spine_downlinks[:, dst_leaf, :]                   # (spines, k, upp)
        down_ok = usable[w.port_link[down_ports]]                        # (spines, k, upp)
        spine_ok = np.asarray(down_ok.any(axis=2)).T                     # (k, spines)
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
        routable[idx] = member >= 0
        ok = member >= 0
        member = np.where(ok, member, 0)
        spine = spine_of_member[member]
        h_spine = hash_fields(self._keys_at(idx), self._spine_salt[spine].astype(np.uint64))
        pref_down = (h_spine % np.uint64(upp)).astype(np.int64)
        if self.mode == "pinned":
            pref_down = self._pref_down[idx]
        if self.mode == "te" and inputs.te_down is not None:
            td = inputs.te_down[idx]
            pref_down = np.where(td >= 0, td, pref_down)
        k_ok = down_ok[spine, np.arange(len(idx)), :]                   # (k, upp)
        down = _choose(pref_down, k_ok, mix64(h_spine))
        ok &= down >= 0
        routable[idx] = ok
        down = np.where(down >= 0, down, 0)
        ch[idx, 1] = np.where(ok, up_ports[np.arange(len(idx)), member], -1)
        ch[idx, 2] = np.where(ok, w.spine_downlinks[spine, dst_leaf, down], -1)
        return ch, routable

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


def _choose(pref: IntArray, ok: NDArray[np.bool_], h: U64) -> IntArray:
    """Keep the preferred member where usable, else rehash over the usable ones (-1 if none)."""
    rows = np.arange(len(pref))
    keep = ok[rows, pref]
    count = ok.sum(axis=1)
    nth = (h % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
    rank = np.cumsum(ok, axis=1) - 1
    alt = np.argmax(ok & (rank == nth[:, None]), axis=1)
    return np.where(keep, pref, np.where(count > 0, alt, -1))
