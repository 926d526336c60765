"""Guards per tier (issue 12.4) on a three-tier fabric: two AI zones of 2 spines x 2 leaves,
joined by 2 aggregation switches (every spine has one uplink to each). A rule per test: each
refuses the drain that would break it, naming itself, and lets the drain that keeps it pass; and
an aggregation link drains through the TE controller and gNMI like any other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.errors import GuardRefused
from pipeline.topology.model import Topology
from pipeline.topology.shape import FabricShape
from remediation.drains.guards import FabricState, Guards, Proposal
from remediation.drains.runs import Phase
from remediation.settings import GuardSettings
from tests.remediation.gnmi_target import Targets
from tests.remediation.rig import Rig, settings
from tests.remediation.support import make_alert
from tests.remediation.te_controller import TeController

TOPO = FabricShape(spines=2, leaves=2, hosts_per_leaf=2, zones=2, aggs=2).build()
AGG_LINK = "agg1~z1-spine1"


def check(link: str, down: set[str] | None = None, drained: set[str] | None = None,
          topology: Topology = TOPO, **floors: Any) -> list[dict[str, Any]]:
    guards = Guards(GuardSettings.model_validate(floors), topology)
    ln = topology.link_by_id[link]
    proposal = Proposal("drain", link, ln.ends(), make_alert(entity=link))
    state = FabricState(drained=set(drained or ()), down=set(down or ()))
    return guards.check(proposal, state, 0)


def refused(link: str, **kw: Any) -> GuardRefused:
    with pytest.raises(GuardRefused) as err:
        check(link, **kw)
    return err.value


def test_the_fabric_is_what_the_tests_think():
    assert set(TOPO.aggs) == {"agg1", "agg2"} and len(TOPO.zones) == 2
    assert {ln.id for ln in TOPO.agg_uplinks("z1-spine1")} == {"agg1~z1-spine1",
                                                                "agg2~z1-spine1"}
    passed = {s["guard"]: s["detail"] for s in check(AGG_LINK)}
    assert "z1-spine1 keeps 400/800 Gbit/s" in passed["capacity_spine_uplinks"]
    assert "zone z1 keeps 1200/1600 Gbit/s" in passed["capacity_zone"]
    assert "agg1 keeps 1200/1600 Gbit/s" in passed["capacity_agg"]


def test_a_spine_keeps_its_floor_of_aggregation_uplinks():
    err = refused(AGG_LINK, spine_uplink_floor=0.6)
    assert err.guard == "capacity_spine_uplinks"
    assert "z1-spine1 would keep 400 of 800 Gbit/s aggregation uplink capacity" in err.reason


def test_a_zone_keeps_its_floor_of_capacity_to_the_rest_of_the_fabric():
    err = refused(AGG_LINK, zone_capacity_floor=0.8)
    assert err.guard == "capacity_zone" and "zone z1 would keep 1200 of 1600" in err.reason
    # a link already down in the zone counts: the second drain is what breaks the floor
    assert check(AGG_LINK, zone_capacity_floor=0.5)
    err = refused(AGG_LINK, down={"agg2~z1-spine2"}, zone_capacity_floor=0.6)
    assert err.guard == "capacity_zone" and "800 of 1600" in err.reason


def test_an_aggregation_switch_keeps_its_floor():
    err = refused(AGG_LINK, agg_capacity_floor=0.8)
    assert err.guard == "capacity_agg" and "agg1 would keep 1200 of 1600" in err.reason


def test_a_zone_is_never_cut_off():
    free = {"spine_uplink_floor": 0, "zone_capacity_floor": 0, "agg_capacity_floor": 0,
            "max_drained_per_spine": 9}
    down = {"agg2~z1-spine1", "agg1~z1-spine2", "agg2~z1-spine2"}
    err = refused(AGG_LINK, down=down, **free)
    assert err.guard == "connectivity" and "would cut zone z1 off" in err.reason
    # zone 1 reaches only agg1, zone 2 then only agg2: no path between them
    err = refused("agg1~z2-spine1", down={"agg2~z1-spine1", "agg2~z1-spine2",
                                          "agg1~z2-spine2"}, **free)
    assert err.guard == "connectivity" and "share no aggregation switch" in err.reason
    assert check("agg1~z2-spine1", down={"agg1~z2-spine2"}, **free)


def test_a_spine_drains_one_aggregation_uplink_at_a_time():
    err = refused(AGG_LINK, drained={"agg2~z1-spine1"}, spine_uplink_floor=0,
                  zone_capacity_floor=0)
    assert err.guard == "blast_radius"
    assert "z1-spine1 already has 1 drained aggregation uplink(s)" in err.reason


def test_leaves_need_a_common_spine_within_their_zone_only():
    # a leaf of zone 1 shares no spine with the leaves of zone 2, by design: still drainable
    passed = {s["guard"]: s["detail"] for s in check("z1-leaf1~z1-spine1")}
    assert "z1-leaf1 keeps spines z1-spine2" in passed["connectivity"]
    err = refused("z1-leaf1~z1-spine1", down={"z1-leaf2~z1-spine2"})
    assert err.guard == "connectivity" and "z1-leaf1 and z1-leaf2 would share no spine" in \
        err.reason


def test_a_spine_floor_counts_its_leaf_facing_links_for_a_leaf_link():
    # z1-spine1 has 2 leaf links and 2 aggregation uplinks: a leaf link is half its leaf side
    err = refused("z1-leaf1~z1-spine1", spine_capacity_floor=0.6)
    assert err.guard == "capacity_spine"
    assert "z1-spine1 would keep 400 of 800 Gbit/s leaf-facing capacity" in err.reason


def test_two_tier_fabrics_keep_their_rules():
    from pipeline.topology.model import spine_leaf

    two = spine_leaf(2, 3, 2)
    passed = {s["guard"] for s in check("leaf1~spine1", topology=two)}
    assert {"connectivity", "capacity_leaf", "capacity_spine", "blast_radius"} <= passed
    assert not passed & {"capacity_zone", "capacity_spine_uplinks", "capacity_agg"}
    err = refused("leaf1~spine1", topology=two, down={"leaf2~spine2"})
    assert err.guard == "connectivity"


@pytest.fixture
def three_tier() -> Iterator[tuple[Targets, TeController]]:
    targets, te = Targets(TOPO), TeController(TOPO).start()
    yield targets, te
    targets.stop()
    te.stop()


def test_an_aggregation_link_drains_through_te_and_gnmi_like_any_other(three_tier):
    targets, te = three_tier
    r = Rig(TOPO, targets, te.url, settings())
    link = TOPO.link_by_id[AGG_LINK]
    r.alerts(make_alert(entity=AGG_LINK), t=0)
    for t, gbps in ((1, 300.0), (10, 300.0), (11, 0.0), (12, 0.0), (13, 0.0)):
        r.traffic(t, link.ends(), gbps)
        r.tick(t)
    run = r.drainer.active[AGG_LINK]
    assert run.phase == Phase.DRAINED, r.records()[-1].detail
    assert te.calls()[0] == ("POST", f"/v1/links/{AGG_LINK}/drain") and te.drained == {AGG_LINK}
    assert {p.device for p, _ in targets.fabric.sets} == {"agg1", "z1-spine1"}
    guards = {s["guard"] for s in run.steps if s["step"] == "guard"}
    assert {"capacity_spine_uplinks", "capacity_zone", "capacity_agg"} <= guards
    assert r.drainer.maintenance.book.get(AGG_LINK) is not None
