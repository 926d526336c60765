"""A fabric's compact description, and the topology it builds.

:class:`FabricShape` is what a scenario's ``fabric`` says about wiring: per AI zone ``spines`` x
``leaves`` with ``hosts_per_leaf`` and ``uplinks_per_pair`` parallel links from every leaf to
every spine of its zone; ``zones`` such zones joined by ``aggs`` aggregation switches, with
``agg_uplinks_per_spine`` parallel links from every spine to every aggregation switch. One zone
without aggregation switches is the two-tier fabric, built exactly as before.

Port numbering follows "host-facing ports first, then uplinks", tier by tier:

* a leaf: ``Ethernet1..H`` to its hosts, then ``H + s * upp + k`` to spine ``s`` (0-based) of its
  zone, parallel link ``k`` (1-based);
* a spine: ``l * upp + k`` to leaf ``l`` of its zone, then ``L * upp + a * aupp + k`` to
  aggregation switch ``a``;
* an aggregation switch: ``(z * S + s) * aupp + k`` to spine ``s`` of zone ``z`` (0-based).

Links are listed leaf-spine zone by zone (leaf by leaf, spine by spine, parallel link), then
spine-aggregation (zone by zone, spine by spine, aggregation switch, parallel link).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pipeline.errors import ConfigError
from pipeline.topology.names import AGG, LEAF, SPINE, switch_name

if TYPE_CHECKING:
    from pipeline.topology.model import Topology


@dataclass(frozen=True)
class FabricShape:
    spines: int                       # per zone
    leaves: int                       # per zone
    hosts_per_leaf: int
    uplinks_per_pair: int = 1
    link_gbps: float = 400.0
    host_gbps: float = 400.0
    zones: int = 1
    aggs: int = 0
    agg_uplinks_per_spine: int = 1
    agg_gbps: float | None = None     # spine-aggregation links; None: link_gbps

    def __post_init__(self) -> None:
        if min(self.spines, self.leaves, self.uplinks_per_pair) < 1 or self.hosts_per_leaf < 0:
            raise ConfigError("a fabric needs at least one spine, one leaf and one uplink per pair")
        if self.zones < 1 or self.aggs < 0 or self.agg_uplinks_per_spine < 1:
            raise ConfigError("a fabric needs at least one zone, aggs >= 0 and at least one "
                              "uplink from each spine to each aggregation switch")
        if self.zones > 1 and self.aggs < 1:
            raise ConfigError(f"{self.zones} zones need aggregation switches to join them (aggs)")

    # ------------------------------------------------------------------ counts

    @property
    def tiers(self) -> int:
        return 3 if self.aggs else 2

    @property
    def zoned(self) -> bool:
        """Whether names carry a zone prefix (``z3-leaf2``): only with several zones."""
        return self.zones > 1

    @property
    def agg_link_gbps(self) -> float:
        return self.link_gbps if self.agg_gbps is None else float(self.agg_gbps)

    @property
    def n_hosts(self) -> int:
        return self.zones * self.leaves * self.hosts_per_leaf

    @property
    def n_switches(self) -> int:
        return self.zones * (self.spines + self.leaves) + self.aggs

    @property
    def n_fabric_links(self) -> int:
        per_zone = self.leaves * self.spines * self.uplinks_per_pair
        return self.zones * (per_zone + self.spines * self.aggs * self.agg_uplinks_per_spine)

    @property
    def n_switch_ports(self) -> int:
        """Connected switch ports: both ends of every fabric link, and each host's leaf port."""
        return 2 * self.n_fabric_links + self.n_hosts

    def oversubscription(self) -> dict[str, float]:
        """Downstream over upstream capacity, per tier that has an upstream (leaf; spine when
        there is an aggregation tier): 1.0 is non-blocking, 6.0 is 6:1."""
        out = {LEAF: self.hosts_per_leaf * self.host_gbps
               / (self.spines * self.uplinks_per_pair * self.link_gbps)}
        if self.aggs:
            out[SPINE] = (self.leaves * self.uplinks_per_pair * self.link_gbps
                          / (self.aggs * self.agg_uplinks_per_spine * self.agg_link_gbps))
        return out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FabricShape:
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"topology shape: {exc}") from exc

    # ------------------------------------------------------------------ building

    def build(self) -> Topology:
        """The topology this shape describes, with the shared names and port numbering."""
        from pipeline.topology.model import Host, Link, Port, Topology

        zs, ls, hp, upp = self.spines, self.leaves, self.hosts_per_leaf, self.uplinks_per_pair
        aupp, gbps, agg_gbps = self.agg_uplinks_per_spine, self.link_gbps, self.agg_link_gbps
        agg_names = tuple(switch_name(AGG, a + 1) for a in range(self.aggs))
        spines: list[str] = []
        leaves: list[str] = []
        hosts: list[Host] = []
        links: list[Link] = []
        suffix = [""] + [f"#{k}" for k in range(2, max(upp, aupp) + 1)]
        for zi in range(self.zones):
            zone = zi + 1 if self.zoned else None
            zone_spines = [switch_name(SPINE, s + 1, zone) for s in range(zs)]
            zone_leaves = [switch_name(LEAF, n + 1, zone) for n in range(ls)]
            spines += zone_spines
            leaves += zone_leaves
            for li, leaf in enumerate(zone_leaves):
                first_host = (zi * ls + li) * hp
                hosts += [Host(f"host{first_host + h + 1}", Port(leaf, f"Ethernet{h + 1}"),
                               self.host_gbps) for h in range(hp)]
                for si, spine in enumerate(zone_spines):
                    base = f"{leaf}~{spine}"
                    for k in range(upp):
                        links.append(Link(base + suffix[k],
                                          Port(leaf, f"Ethernet{hp + si * upp + k + 1}"),
                                          Port(spine, f"Ethernet{li * upp + k + 1}"), gbps))
        for g, spine in enumerate(spines):
            for ai, agg in enumerate(agg_names):
                base = f"{agg}~{spine}"
                for k in range(aupp):
                    links.append(Link(base + suffix[k], Port(agg, f"Ethernet{g * aupp + k + 1}"),
                                      Port(spine, f"Ethernet{ls * upp + ai * aupp + k + 1}"),
                                      agg_gbps))
        return Topology(spines=tuple(spines), leaves=tuple(leaves), hosts=tuple(hosts),
                        links=tuple(links), aggs=agg_names, shape=self)
