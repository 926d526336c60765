"""``rocewatch bench fabric`` at a small scale: what it serves is the lab's own, and a run through
the real path finds each injected fault on the right entity, stores what was collected and loses
nothing. Behaviour only: the numbers it measures are printed by the benchmark, never asserted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from lab.inventory import plan_agents
from lab.lldp import LldpFabric
from lab.runner import SimOptions, published_layout
from lab.scenario.load import load_scenario
from lab.wiring import build_wiring
from rocewatch.bench.fabric import REFERENCE, run_fabric
from rocewatch.bench.fabric_models import FabricModels
from rocewatch.bench.fabric_plan import RESIZE, plan_scenario

#: a 3-tier fabric of the reference's shape: 2 zones × (2 spines, 2 leaves × 2 hosts), 2 aggs
SMALL = dict(zip(RESIZE, (2, 2, 2, 2, 2), strict=True))


def test_every_switch_model_serves_the_labs_own_leaves(tmp_path: Path) -> None:
    path, _ = plan_scenario(REFERENCE, tmp_path, SMALL, 1.0, 10, 5, 30.0)
    scenario = load_scenario(path)
    wiring = build_wiring(scenario.topology())
    layout = published_layout(scenario, wiring, SimOptions().buffers)
    plans = plan_agents(scenario)
    lldp = LldpFabric(scenario, wiring, layout, {p.switch: p.profile for p in plans})
    for queues in ("active", "all"):
        models = FabricModels(wiring, layout, lldp, queues)
        shared = 0
        for plan in plans:
            mine = models.model(plan.switch, plan.profile)
            own = models.reference(plan.switch, plan.profile)
            shared += mine is not own and mine.table.paths is not own.table.paths
            assert mine.switch == plan.switch
            assert mine.table.paths == own.table.paths, plan.switch
            assert np.array_equal(mine.table.kinds, own.table.kinds), plan.switch
            assert np.array_equal(mine.table.index, own.table.index), plan.switch
            assert mine.table.consts == own.table.consts, plan.switch
            assert mine.port_of == own.port_of, plan.switch
            assert (mine.sonic is None) == (own.sonic is None), plan.switch
            if mine.sonic is not None:
                for f in dataclasses.fields(mine.sonic):
                    assert getattr(mine.sonic, f.name) == getattr(own.sonic, f.name), (
                        plan.switch, f.name)
        # the point of the templates: most switches share their role's
        assert shared >= len(plans) // 2
        if queues == "active":
            # the zero cell (queues that never carry traffic) is not served
            assert all(not (models.model(p.switch, p.profile).table.index
                            == layout.zero_index).any() for p in plans)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_small_fabric_run_finds_each_fault_and_loses_nothing(tmp_path: Path) -> None:
    r = run_fabric(REFERENCE, SMALL, interval_s=1.0, speed=1.0, fault_at=40, gap=5,
                   group_wait_s=2.0, catch_up_s=60, api_runs=1, work=tmp_path)
    rep = r["report"]
    # the faults began once the platform watched every target (else the run proves less)
    assert r["up_sim_s"] < r["faults"][0]["at_s"], (r["up_sim_s"], r["faults"][0])
    kinds = {f["kind"]: f for f in r["findings"]}
    assert set(kinds) == {"pfc_storm", "link_corruption", "link_down"}
    for f in r["findings"]:
        assert f["found"], f"{f['kind']} on {f['target']} not named: {rep['entries']}"
        assert f["notify_s"] is not None, f"{f['kind']} on {f['target']} never notified"
    named = {(a["kind"], a["entity"]) for a in rep["alerts"]}
    assert ("pfc_storm", kinds["pfc_storm"]["target"]) in named
    assert ("faulty_link", kinds["link_corruption"]["target"]) in named
    assert ("link_down", kinds["link_down"]["target"]) in named
    # every target was collected from, and the samples reached the store, each stage reading
    # them all
    for name, c in rep["collectors"].items():
        assert c["targets_up"] == c["targets_total"] > 0, name
    assert rep["collected"] > 0 and rep["stored"] > 0
    assert set(rep["rows"]) == {"ingest+store", "detect", "remediate"}
    assert all(n > 0 for n in rep["rows"].values()), rep["rows"]
    # nothing lost: every message older than half a minute was committed by every group (ingest
    # commits once the store has it), nothing was dropped, undecodable or dead-lettered; the
    # store holds the rows ingest committed, but for repeats (a sample sent twice is stored
    # once: inserts are idempotent), which are far fewer than a hundredth of them
    kept = rep["kept"]
    assert kept["committed_rows"] > 0
    assert kept["store_rows"] >= 0.99 * kept["committed_rows"], kept
    assert kept["stale"] == {"ingest": 0, "detect": 0, "remediation-telemetry": 0}, kept
    assert rep["bus_dropped"] == 0 and rep["undecodable"] == 0
    assert rep["ingest"]["dead_letters"]["parked"] == 0
    assert rep["ingest"]["store_errors"] == 0
    # the platform was metered stage by stage, the source apart
    assert rep["cpu"]["total"] > 0 and rep["cpu"].get("collect", 0) > 0
    assert {"lab", "shard0"} <= set(r["source_cpu"])
    assert all(c["status"] == 200 for c in r["api"]["cases"].values()), r["api"]
