"""A validated scenario (format 1): its immutable parts, the format's closed vocabularies, and the
ground truth it implies.

The format is specified in ``shared/scenarios/README.md``; :mod:`lab.scenario.load` reads a file
into these types. A :class:`Scenario` is immutable and picklable, so the simulation process can
rebuild the identical fabric from it (same seed, same run). The fault kinds are the platform's
(:data:`pipeline.kinds.FAULT_KINDS`): the scorer maps each to the incident it should produce.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pipeline.topology.model import FabricShape, Topology

ROUTING_MODES = ("ecmp", "eecmp", "pinned", "te")
PATTERNS = ("allreduce", "alltoall", "uniform", "incast", "none")
PROFILES = ("openconfig", "arista", "sonic")
DIRECTIONS = ("a_to_b", "b_to_a", "both")
#: which end of a link loses its LLDP neighbour (``lldp_neighbor_drop``)
SIDES = ("a", "b", "both")


@dataclass(frozen=True)
class AgentMix:
    """Fractions of switches reached over gNMI and over SNMP (they sum to 1)."""

    gnmi: float = 1.0
    snmp: float = 0.0


@dataclass(frozen=True)
class FabricSpec:
    """The ``fabric`` section; ``spines`` and ``leaves`` are per zone."""

    spines: int
    leaves: int
    hosts_per_leaf: int
    uplinks_per_pair: int = 1
    link_gbps: float = 400.0
    host_gbps: float = 400.0
    agents: AgentMix = AgentMix()
    profiles: tuple[str, ...] = ("openconfig",)
    zones: int = 1
    aggs: int = 0
    agg_uplinks_per_spine: int = 1
    agg_gbps: float | None = None

    @property
    def shape(self) -> FabricShape:
        return FabricShape(self.spines, self.leaves, self.hosts_per_leaf, self.uplinks_per_pair,
                           self.link_gbps, self.host_gbps, self.zones, self.aggs,
                           self.agg_uplinks_per_spine, self.agg_gbps)


@dataclass(frozen=True)
class TrafficSpec:
    """One superposed traffic entry; ``hosts`` is resolved to host names in rank order given."""

    pattern: str
    hosts: tuple[str, ...]
    load: float = 1.0
    qps_per_flow: int = 1


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    target: str
    at_s: float
    until_s: float | None
    params: Mapping[str, Any] = field(default_factory=dict)

    def end_s(self, duration_s: float) -> float:
        return self.until_s if self.until_s is not None else duration_s

    def active(self, t: float, duration_s: float) -> bool:
        # a little slack: simulated time is a multiple of a float step
        return self.at_s - 1e-9 <= t < self.end_s(duration_s) - 1e-9


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    duration_s: float
    sample_interval_s: float
    fabric: FabricSpec
    routing: str
    traffic: tuple[TrafficSpec, ...]
    faults: tuple[FaultSpec, ...]
    source: str = ""

    def topology(self) -> Topology:
        return build_topology(self.fabric.shape)

    def truth(self) -> list[dict[str, Any]]:
        """The injected faults as the run report's ``truth`` entries."""
        return [
            {"kind": f.kind, "target": f.target, "start_s": f.at_s,
             "end_s": f.end_s(self.duration_s)}
            for f in self.faults
        ]


@lru_cache(maxsize=8)
def build_topology(shape: FabricShape) -> Topology:
    # a topology is immutable: the lab, its agents' plan and the loader share one per shape
    return shape.build()
