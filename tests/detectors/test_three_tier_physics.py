"""Detection across three tiers against the lab's physics, in process (no agents, no collectors):
a storm in zone 2 whose pause climbs through the aggregation tier into zone 5's spines is one
root cause in zone 2, and a spine's flows colliding on one of its aggregation uplinks is an ECMP
imbalance of that spine."""

from __future__ import annotations

from typing import Any

import pytest

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from lab.scenario.load import parse_scenario
from pipeline.model import Alert
from pipeline.topology.model import Port
from tests.detectors.simfeed import EPOCH_NS, SimFeed, run_chain

pytestmark = pytest.mark.slow

ZONE_2 = ["host5", "host6", "host7", "host8"]
ZONE_5 = ["host17", "host18", "host19", "host20"]


def scenario(faults: list[dict[str, Any]], traffic: list[dict[str, Any]], *, duration: float,
             routing: str = "eecmp", aggs: int = 2, zones: int = 5, hosts: int = 2) -> Any:
    return parse_scenario({
        "format": 1, "name": "three-tier", "seed": 5, "duration_s": duration,
        "sample_interval_s": 1, "routing": routing, "traffic": traffic, "faults": faults,
        "fabric": {"zones": zones, "spines": 2, "leaves": 2, "hosts_per_leaf": hosts,
                   "aggs": aggs, "link_gbps": 400, "host_gbps": 400,
                   "profiles": ["sonic", "openconfig"]}})


def roots(alerts: list[Alert]) -> dict[str, Alert]:
    return {a.fingerprint: a for a in alerts if a.root_cause}


def test_a_storm_in_zone_2_through_the_aggregation_tier_into_zone_5_has_one_root_in_zone_2():
    # a job spanning zones 2 and 5 (its ring crosses the aggregation tier), the rest of the
    # fabric busy too; host6's NIC stops draining
    sc = scenario([{"kind": "pfc_storm", "target": "host6", "at_s": 20, "until_s": 40,
                    "params": {"priority": 3}}],
                  [{"pattern": "allreduce", "hosts": ZONE_2 + ZONE_5, "load": 0.5,
                    "qps_per_flow": 8},
                   {"pattern": "allreduce", "hosts": "all", "load": 0.2, "qps_per_flow": 8}],
                  duration=45)
    topo = sc.topology()
    alerts = run_chain(SimFeed(sc), DetectionChain(DetectionSettings(), topo))
    found = roots(alerts)
    assert {(a.name, a.entity) for a in found.values()} == {("pfc_storm", "host6")}
    storm = next(iter(found.values()))
    assert topo.zone(topo.host_by_name["host6"].port.device) == 2
    assert (storm.starts_ns - EPOCH_NS) / 1e9 <= 20 + 2 * sc.sample_interval_s
    echoes = {a.ports[0].partition(":")[0] for a in alerts
              if a.inhibited_by == storm.fingerprint and a.ports}
    # the pause reached the aggregation tier and, through it, zone 5's spines: all the storm's
    assert echoes & set(topo.aggs)
    assert echoes & {s for s in topo.spines if topo.zone(s) == 5}


def test_a_spine_colliding_on_one_aggregation_uplink_is_an_imbalance_of_that_spine():
    sc = scenario([{"kind": "ecmp_collision", "target": "z2-spine1", "at_s": 30,
                    "params": {"flows": 40}}],
                  [{"pattern": "alltoall", "hosts": "all", "load": 0.5, "qps_per_flow": 1}],
                  duration=45, routing="ecmp", aggs=4, zones=3, hosts=4)
    alerts = run_chain(SimFeed(sc), DetectionChain(DetectionSettings(), sc.topology()))
    found = {(a.name, a.entity): a for a in roots(alerts).values()}
    assert set(found) == {("ecmp_imbalance", "z2-spine1")}
    hot = found[("ecmp_imbalance", "z2-spine1")].ports[0]
    assert sc.topology().attachment(Port.parse(hot)) in sc.topology().agg_uplinks("z2-spine1")
