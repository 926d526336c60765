"""Each guard refuses with its own name and a reason that carries the numbers it saw."""

from __future__ import annotations

import pytest

from pipeline.errors import GuardRefused
from pipeline.topology.model import spine_leaf
from remediation.drains.guards import HOUR_NS, FabricState, Guards, Proposal, propose
from remediation.settings import GuardSettings
from tests.remediation.rig import Rig, settings
from tests.remediation.support import NS, at, make_alert

FABRIC = spine_leaf(4, 4, 2)  # each leaf: 4 uplinks of 400G; each spine: 4 links


def check(link: str = "leaf2~spine1", state: FabricState | None = None, topology=FABRIC,
          **guards) -> list[dict]:
    g = Guards(GuardSettings.model_validate(guards), topology)
    proposal = propose(make_alert(entity=link), topology)
    assert proposal is not None
    return g.check(proposal, state or FabricState(), at(100))


def refused(**kw) -> GuardRefused:
    with pytest.raises(GuardRefused) as info:
        check(**kw)
    return info.value


def test_all_guards_pass_on_a_healthy_fabric():
    passed = check()
    assert [p["guard"] for p in passed] == [
        "halted", "incident", "target", "one_at_a_time", "rate_limit", "cooldown",
        "connectivity", "capacity_leaf", "capacity_spine", "blast_radius"]
    assert "leaf2 keeps 1200/1600 Gbit/s (75% >= 50%)" in passed[7]["detail"]


def test_capacity_floor_per_leaf_corropt():
    err = refused(leaf_capacity_floor=0.8)
    assert err.guard == "capacity_leaf"
    assert "leaf2 would keep 1200 of 1600 Gbit/s uplink capacity (75%)" in err.reason
    # a link already down on the same leaf counts against the floor
    err = refused(state=FabricState(down={"leaf2~spine3"}), leaf_capacity_floor=0.6)
    assert err.guard == "capacity_leaf" and "800 of 1600" in err.reason


def test_capacity_floor_per_spine():
    err = refused(state=FabricState(down={"leaf1~spine1"}), spine_capacity_floor=0.6,
                  leaf_capacity_floor=0.0)
    assert err.guard == "capacity_spine" and "spine1 would keep 800 of 1600" in err.reason


def test_connectivity_never_isolates_a_leaf():
    two = spine_leaf(2, 2, 1)
    err = refused(link="leaf1~spine1", topology=two, state=FabricState(down={"leaf1~spine2"}),
                  leaf_capacity_floor=0.0, spine_capacity_floor=0.0)
    assert err.guard == "connectivity" and "leaf1 would have no uplink left" in err.reason
    # leaf1 keeps spine2 only, leaf2 has lost spine2: they would share no spine
    err = refused(link="leaf1~spine1", topology=two, state=FabricState(down={"leaf2~spine2"}),
                  leaf_capacity_floor=0.0, spine_capacity_floor=0.0)
    assert err.guard == "connectivity" and "leaf1 and leaf2 would share no spine" in err.reason


def test_one_action_at_a_time():
    err = refused(state=FabricState(busy="leaf3~spine2"))
    assert err.guard == "one_at_a_time" and "leaf3~spine2" in err.reason


def test_rate_limit_per_hour():
    recent = [at(100) - i * 60 * NS for i in range(3)]
    err = refused(state=FabricState(started_ns=recent), max_actions_per_hour=3)
    assert err.guard == "rate_limit" and "3 actions in the last hour (limit 3)" in err.reason
    old = [at(100) - HOUR_NS - NS] * 5  # older than an hour: they do not count
    assert check(state=FabricState(started_ns=old), max_actions_per_hour=3)


def test_cooldown_fabric_wide_and_per_target():
    err = refused(state=FabricState(last_finished_ns=at(40)), cooldown=300)
    assert err.guard == "cooldown" and "finished 60s ago; cool-down is 300s" in err.reason
    err = refused(state=FabricState(target_finished_ns={"leaf2~spine1": at(0)}),
                  target_cooldown=3600)
    assert err.guard == "cooldown" and "leaf2~spine1 was acted on 100s ago" in err.reason


def test_blast_radius_per_leaf_and_fabric_wide():
    err = refused(state=FabricState(drained={"leaf2~spine4"}), leaf_capacity_floor=0.0)
    assert err.guard == "blast_radius" and "leaf2 already has 1 drained uplink" in err.reason
    err = refused(state=FabricState(drained={"leaf3~spine4"}), leaf_capacity_floor=0.0)
    assert err.guard == "blast_radius" and "1 links already drained (limit 1" in err.reason
    assert check(state=FabricState(drained={"leaf3~spine4"}), max_drained_fraction=0.2)


def test_halted_and_incident_quality():
    err = refused(state=FabricState(halted="7 incidents at once"))
    assert err.guard == "halted" and "resume" in err.reason
    g = Guards(GuardSettings(min_confidence=0.9), FABRIC)
    weak = propose(make_alert(entity="leaf1~spine1", confidence=0.6), FABRIC)
    assert weak is not None
    with pytest.raises(GuardRefused, match=r"incident: confidence 0\.60 is below 0\.90"):
        g.check(weak, FabricState(), at(100))
    symptom = Proposal("drain", "leaf1~spine1", weak.ports,
                       make_alert(entity="leaf1~spine1", root_cause=False))
    with pytest.raises(GuardRefused, match="only a firing root-cause incident"):
        g.check(symptom, FabricState(), at(100))


def test_a_fabric_link_is_never_the_target_of_a_host_problem():
    assert propose(make_alert("pfc_storm", "leaf1~spine1"), FABRIC) is None
    assert propose(make_alert("faulty_link", "host3"), FABRIC) is None
    assert propose(make_alert("incast", "host3"), FABRIC) is None  # notify only
    iso = propose(make_alert("pfc_storm", "host3"), FABRIC)
    assert iso is not None and iso.runbook == "isolate"
    assert iso.ports == (FABRIC.host_by_name["host3"].port,)
    wrong = Proposal("isolate", "host3", (FABRIC.link_by_id["leaf2~spine1"].a,), iso.alert)
    with pytest.raises(GuardRefused, match="not a host on a leaf port"):
        Guards(GuardSettings(), FABRIC).check(wrong, FabricState(), at(100))


def test_isolated_hosts_are_capped():
    iso = propose(make_alert("pfc_storm", "host3"), FABRIC)
    assert iso is not None
    with pytest.raises(GuardRefused, match=r"1 host\(s\) already isolated"):
        Guards(GuardSettings(), FABRIC).check(iso, FabricState(isolated_hosts={"host1"}),
                                              at(100))


def test_a_refusal_that_may_lift_is_retried_while_the_incident_fires():
    r = Rig(FABRIC, None, "", settings(mode="dry_run", guards={"cooldown": "60s"}))
    r.drainer.last_finished_ns = at(0)
    r.alerts(make_alert(entity="leaf2~spine1", start=0))
    r.tick(10)
    first = r.records("drain")[-1]
    assert first.outcome == "refused" and "will retry" in first.detail
    r.tick(30)
    assert len(r.records("drain")) == 2  # silent re-checks while the cool-down holds
    r.tick(61)
    r.tick(71)
    last = r.records("drain")[-1]
    assert last.outcome == "done" and last.detail.startswith("[decided]")
