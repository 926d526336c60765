"""The fabric invariants a link drain must keep, tier by tier (two tiers: leaves and spines;
three: AI zones of leaves and spines joined by aggregation switches).

A link joins a lower switch to an upper one: a leaf to a spine of its zone, or a spine to an
aggregation switch. Counting the links already down or drained (ours, and the TE controller's),
the drain is refused when it would break

* **connectivity** (the TE controller's own rule, ``lab/te/cspf.py``, checked first): every leaf
  keeps an uplink; two leaves of a zone keep a common spine; across zones, every zone keeps a way
  up to the aggregation tier and every leaf a common aggregation switch with every leaf of the
  other zones ("never cut a zone off");
* a **capacity floor** of each switch on the link, for the links it has towards the other end's
  tier: a leaf keeps ``leaf_capacity_floor`` of its uplink capacity (CorrOpt's per-ToR floor), a
  spine ``spine_capacity_floor`` of its leaf-facing capacity, or ``spine_uplink_floor`` of its
  aggregation uplinks, an aggregation switch ``agg_capacity_floor`` of its capacity; and
* for a spine's aggregation uplink, the **zone's capacity to the rest of the fabric** (the sum
  of its spines' aggregation uplinks): at least ``zone_capacity_floor`` of what it was built with;
* the **blast radius**: drained links per leaf (``max_drained_per_leaf``) or per spine's
  aggregation uplinks (``max_drained_per_spine``), and fabric-wide (``max_drained_fraction``).

Each check that passes leaves an audit step with the numbers it saw; the first that fails raises
:class:`~pipeline.errors.GuardRefused` naming itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pipeline.errors import GuardRefused
from pipeline.topology.model import LEAF, Link, Topology
from remediation.settings import GuardSettings

#: the guards this module may refuse with (all may lift once the fabric changes)
GUARDS = frozenset({"connectivity", "capacity_leaf", "capacity_spine", "capacity_spine_uplinks",
                    "capacity_agg", "capacity_zone", "blast_radius"})


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"


def _gbps(links: Iterable[Link], unavailable: set[str]) -> float:
    return sum(ln.gbps or 1.0 for ln in links if ln.id not in unavailable)


class FabricInvariants:
    def __init__(self, settings: GuardSettings, topology: Topology) -> None:
        self.s = settings
        self.topology = topology
        t = topology
        #: per switch, its links towards the tier above and the tier below, and what they carry
        self._up = {sw: t.up_links(sw) for sw in t.switches}
        self._down = {sw: t.down_links(sw) for sw in t.switches}
        self._initial_up = {sw: _gbps(links, set()) for sw, links in self._up.items()}
        self._initial_down = {sw: _gbps(links, set()) for sw, links in self._down.items()}
        self._zone_spines: dict[int | None, list[str]] = {
            z: [sp for sp in t.spines if t.zone(sp) == z] for z in t.zones}
        self._zone_leaves: dict[int | None, list[str]] = {}
        for leaf in t.leaves:
            self._zone_leaves.setdefault(t.zone(leaf), []).append(leaf)
        self._initial_zone: dict[int | None, float] = {z: sum(self._initial_up[sp] for sp in sps)
                              for z, sps in self._zone_spines.items()}

    # -- the check -----------------------------------------------------------------------------

    def check(self, link_id: str, drained: set[str], down: set[str],
              steps: list[dict[str, Any]]) -> None:
        link = self.topology.link_by_id[link_id]
        unavailable = drained | down | {link_id}
        lower, upper = self.ends(link)

        def ok(guard: str, detail: str) -> None:
            steps.append({"step": "guard", "guard": guard, "outcome": "done", "detail": detail})

        ok("connectivity", self._connectivity(lower, unavailable))
        if self.topology.role(lower) == LEAF:
            ok("capacity_leaf", self._floor("capacity_leaf", lower, self._up[lower],
                                            self._initial_up[lower], self.s.leaf_capacity_floor,
                                            unavailable, "uplink capacity"))
            ok("capacity_spine", self._floor("capacity_spine", upper, self._down[upper],
                                             self._initial_down[upper],
                                             self.s.spine_capacity_floor, unavailable,
                                             "leaf-facing capacity"))
        else:
            ok("capacity_spine_uplinks", self._floor(
                "capacity_spine_uplinks", lower, self._up[lower], self._initial_up[lower],
                self.s.spine_uplink_floor, unavailable, "aggregation uplink capacity"))
            ok("capacity_agg", self._floor("capacity_agg", upper, self._down[upper],
                                           self._initial_down[upper], self.s.agg_capacity_floor,
                                           unavailable, "capacity"))
            ok("capacity_zone", self._zone_floor(lower, unavailable))
        ok("blast_radius", self._blast_radius(link_id, lower, drained))

    def ends(self, link: Link) -> tuple[str, str]:
        """``(lower, upper)``: the leaf and the spine, or the spine and the aggregation switch."""
        a, b = link.a.device, link.b.device
        ta, tb = self.topology.tier(a) or 0, self.topology.tier(b) or 0
        return (a, b) if ta < tb else (b, a)

    # -- connectivity --------------------------------------------------------------------------

    def _above(self, switch: str, unavailable: set[str]) -> set[str]:
        """The switches of the tier above that ``switch`` still reaches."""
        out = set()
        for ln in self._up[switch]:
            if ln.id not in unavailable:
                out.add(ln.b.device if ln.a.device == switch else ln.a.device)
        return out

    def _connectivity(self, lower: str, unavailable: set[str]) -> str:
        t = self.topology
        zones = bool(t.aggs) and len(t.zones) > 1
        aggs_of_spine = {sp: self._above(sp, unavailable) for sp in t.spines} if zones else {}

        def aggs_of(leaf: str) -> frozenset[str]:
            return frozenset().union(*(aggs_of_spine[sp] for sp in self._above(leaf, unavailable)))

        if t.role(lower) == LEAF:
            spines = self._above(lower, unavailable)
            if not spines:
                raise GuardRefused("connectivity", f"{lower} would have no uplink left")
            for other in self._zone_leaves[t.zone(lower)]:
                if other != lower and not spines & self._above(other, unavailable):
                    raise GuardRefused("connectivity", f"{lower} and {other} would share no "
                                       "spine")
            detail = f"{lower} keeps spines {', '.join(sorted(spines))}"
            if not zones:
                return detail
            checked = [lower]
        else:
            zone = t.zone(lower)
            if not any(aggs_of_spine[sp] for sp in self._zone_spines.get(zone, ())):
                raise GuardRefused("connectivity", f"would cut zone z{zone} off the "
                                   "aggregation tier")
            detail = (f"{lower} keeps aggregation "
                      f"{', '.join(sorted(aggs_of_spine[lower])) or 'none (its zone does)'}")
            checked = list(self._zone_leaves[zone])
        # across zones: a common aggregation switch with every leaf of every other zone (leaves
        # of a zone mostly reach the same ones: each distinct set is checked once)
        mine = t.zone(lower)
        elsewhere = {(z, aggs_of(leaf)): leaf for z, leaves in self._zone_leaves.items()
                     if z != mine for leaf in leaves}
        for leaf in checked:
            reach = aggs_of(leaf)
            if not reach:
                raise GuardRefused("connectivity", f"{leaf} would reach no aggregation switch")
            for (_, theirs), other in elsewhere.items():
                if not reach & theirs:
                    raise GuardRefused("connectivity", f"{leaf} and {other} would share no "
                                       "aggregation switch")
        return f"{detail}; every zone keeps a way to every other"

    # -- capacity ------------------------------------------------------------------------------

    @staticmethod
    def _floor(guard: str, switch: str, links: list[Link], initial: float, floor: float,
               unavailable: set[str], what: str) -> str:
        left = _gbps(links, unavailable)
        if initial <= 0 or left / initial < floor:
            raise GuardRefused(guard, f"{switch} would keep {left:.0f} of {initial:.0f} Gbit/s "
                               f"{what} ({_pct(left, initial)}), below the floor of {floor:.0%}")
        return f"{switch} keeps {left:.0f}/{initial:.0f} Gbit/s ({_pct(left, initial)} >= " \
               f"{floor:.0%})"

    def _zone_floor(self, spine: str, unavailable: set[str]) -> str:
        zone = self.topology.zone(spine)
        if zone is None or zone not in self._zone_spines:
            return "no zone"
        left = sum(_gbps(self._up[sp], unavailable) for sp in self._zone_spines[zone])
        initial = self._initial_zone[zone]
        floor = self.s.zone_capacity_floor
        if initial <= 0 or left / initial < floor:
            raise GuardRefused("capacity_zone", f"zone z{zone} would keep {left:.0f} of "
                               f"{initial:.0f} Gbit/s to the rest of the fabric "
                               f"({_pct(left, initial)}), below the floor of {floor:.0%}")
        return (f"zone z{zone} keeps {left:.0f}/{initial:.0f} Gbit/s to the rest of the fabric "
                f"({_pct(left, initial)} >= {floor:.0%})")

    # -- blast radius --------------------------------------------------------------------------

    def _blast_radius(self, link_id: str, lower: str, drained: set[str]) -> str:
        s, t = self.s, self.topology
        leaf = t.role(lower) == LEAF
        limit_here = s.max_drained_per_leaf if leaf else s.max_drained_per_spine
        mine = {ln.id for ln in self._up[lower]}
        here = len((drained - {link_id}) & mine)
        if here >= limit_here:
            what = "uplink(s)" if leaf else "aggregation uplink(s)"
            raise GuardRefused("blast_radius", f"{lower} already has {here} drained {what} "
                               f"(limit {limit_here})")
        limit = max(1, math.floor(s.max_drained_fraction * len(t.links)))
        ours = len(drained - {link_id})
        if ours >= limit:
            raise GuardRefused("blast_radius", f"{ours} links already drained (limit {limit}, "
                               f"{s.max_drained_fraction:.0%} of {len(t.links)})")
        return f"{here} drained on {lower}, {ours} of {limit} fabric-wide"

