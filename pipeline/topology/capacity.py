"""What a fabric's tiers and zones can carry, and the paths between two hosts.

* **Oversubscription** of a switch: the capacity below it (host links for a leaf, leaf links for a
  spine) over the capacity above it (spine links for a leaf, aggregation links for a spine);
  per tier, the worst switch of the tier. 1.0 is non-blocking; Meta's aggregation tier is
  oversubscribed (notes/anchors-papers.md §1.1).
* **A zone's capacity to the rest of the fabric**: the sum of its spines' aggregation uplinks,
  the most cross-zone traffic the zone can send (or receive) at once.
* **Paths**: the roles a packet crosses from one host to another (``leaf``; ``leaf spine leaf``
  within a zone; ``leaf spine agg spine leaf`` across zones) and how many equal-cost paths there
  are, counting parallel links at every hop.
* A one-line description of the fabric that stays short at any size.

Everything is computed from the links themselves, so it holds for a hand-written topology too.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import ConfigError
from pipeline.topology.model import Topology
from pipeline.topology.names import AGG, LEAF, SPINE


@dataclass(frozen=True)
class PathShape:
    """The roles crossed from a source host to a destination host, and the equal-cost paths."""

    roles: tuple[str, ...]
    count: int

    @property
    def cross_zone(self) -> bool:
        return AGG in self.roles


def down_gbps(topo: Topology, switch: str) -> float:
    hosts = sum(h.gbps for h in topo.host_ports(switch))
    return hosts + sum(ln.gbps for ln in topo.down_links(switch))


def up_gbps(topo: Topology, switch: str) -> float:
    return sum(ln.gbps for ln in topo.up_links(switch))


def oversubscription(topo: Topology, switch: str) -> float | None:
    """Down over up capacity of one switch; None for a switch with no uplinks (the top tier)."""
    up = up_gbps(topo, switch)
    return down_gbps(topo, switch) / up if up > 0 else None


def tier_oversubscription(topo: Topology) -> dict[str, float]:
    """Per tier that has uplinks (``leaf``, and ``spine`` in a three-tier fabric): its worst
    switch's oversubscription."""
    out: dict[str, float] = {}
    for role, switches in ((LEAF, topo.leaves), (SPINE, topo.spines)):
        ratios = [r for r in (oversubscription(topo, s) for s in switches) if r is not None]
        if ratios:
            out[role] = max(ratios)
    return out


def zone_capacity_gbps(topo: Topology, zone: int) -> float:
    """What a zone's spines can carry to the aggregation tier (0 in a two-tier fabric)."""
    return sum(ln.gbps for sp in topo.spines if topo.zone(sp) == zone
               for ln in topo.agg_uplinks(sp))


def path_shape(topo: Topology, src_host: str, dst_host: str) -> PathShape:
    """The roles crossed from ``src_host`` to ``dst_host`` and the number of equal-cost paths."""
    try:
        src = topo.host_by_name[src_host].port.device
        dst = topo.host_by_name[dst_host].port.device
    except KeyError as exc:
        raise ConfigError(f"no host {exc} in this topology") from exc
    if src == dst:
        return PathShape((LEAF,), 1)
    up = _fan(topo, src, SPINE)                       # spine -> parallel links from src
    down = _fan(topo, dst, SPINE)
    if topo.zone(src) == topo.zone(dst):
        count = sum(n * down.get(sp, 0) for sp, n in up.items())
        return PathShape((LEAF, SPINE, LEAF), count)
    # agg -> number of paths from src up to it, and from it down to dst
    to_agg: dict[str, int] = {}
    for sp, n in up.items():
        for agg, m in _fan(topo, sp, AGG).items():
            to_agg[agg] = to_agg.get(agg, 0) + n * m
    from_agg: dict[str, int] = {}
    for sp, n in down.items():
        for agg, m in _fan(topo, sp, AGG).items():
            from_agg[agg] = from_agg.get(agg, 0) + n * m
    count = sum(n * from_agg.get(agg, 0) for agg, n in to_agg.items())
    return PathShape((LEAF, SPINE, AGG, SPINE, LEAF), count)


def _fan(topo: Topology, switch: str, role: str) -> dict[str, int]:
    """Neighbours of ``switch`` with ``role``, and how many parallel links lead to each."""
    out: dict[str, int] = {}
    for ln in topo.uplinks(switch):
        far = ln.b.device if ln.a.device == switch else ln.a.device
        if topo.role(far) == role:
            out[far] = out.get(far, 0) + 1
    return out


def describe(topo: Topology) -> str:
    """One line: the shape (when known), the counts, and each tier's oversubscription."""
    s = topo.shape
    counts = (f"{len(topo.switches):,} switches, {len(topo.hosts):,} hosts, "
              f"{len(topo.links):,} links, {topo.n_switch_ports:,} switch ports")
    ratios = ", ".join(f"{role} {r:g}:1" for role, r in tier_oversubscription(topo).items())
    if s is None:
        head = f"{len(topo.spines)} spines, {len(topo.leaves)} leaves"
        if topo.aggs:
            head += f", {len(topo.aggs)} aggregation switches"
    else:
        zone = (f"{s.spines} spines x {s.leaves} leaves x {s.hosts_per_leaf} hosts, "
                f"{s.uplinks_per_pair} uplink(s) per leaf-spine pair")
        head = zone if s.zones == 1 else f"{s.zones} zones of ({zone})"
        if s.aggs:
            head += (f", {s.aggs} aggregation switches with {s.agg_uplinks_per_spine} link(s) "
                     f"per spine at {s.agg_link_gbps:g}G")
    return f"{head}: {counts}; oversubscription {ratios}"
