"""Runbook steps against the lab's own switch agents (real gNMI targets over a simulated fabric),
reached the way a deployment reaches switches: addresses and credentials from ``agents.json``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lab.runtime import Lab
from pipeline.wire.commands import Repair
from remediation.drains.devices import DeviceDirectory
from remediation.drains.runs import Phase
from remediation.drains.switch import GnmiSwitches
from remediation.settings import GnmiSettings
from tests.remediation.rig import Rig, settings
from tests.remediation.support import at, make_alert
from tests.remediation.te_controller import TeController

SCENARIO = """\
format: 1
name: remediation-agents
seed: 3
duration_s: 3600
sample_interval_s: 1
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 1, uplinks_per_pair: 1, link_gbps: 400,
         host_gbps: 400}
routing: ecmp
traffic:
  - {pattern: uniform, hosts: all, load: 0.2, qps_per_flow: 2}
faults: []
"""


def running_lab(factory: pytest.TempPathFactory, folder: str, scenario: str) -> Iterator[Any]:
    """The lab playing ``scenario`` at speed 10 while the module's tests run."""
    where = factory.mktemp(folder)
    (where / "scenario.yaml").write_text(scenario)
    running = Lab(where / "scenario.yaml", speed=10, out_dir=where / "out").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from running_lab(tmp_path_factory, "lab", SCENARIO)


def switches(lab: Any) -> GnmiSwitches:
    agents = Path(lab.out_dir) / "agents.json"
    return GnmiSwitches(DeviceDirectory(GnmiSettings(lab_agents_file=str(agents))), 5)


def test_disable_and_enable_a_port_on_the_lab_switches(lab):
    sw = switches(lab)
    link = lab.topology.link_by_id["leaf2~spine2"]
    try:
        assert sw.status(link.a).up
        assert "UPDATE" in sw.set_enabled(link.b, False)
        assert sw.status(link.b).down
        assert sw.status(link.a).oper == "DOWN"  # the far end sees the link go down
        sw.set_enabled(link.b, True)
        assert sw.status(link.b).up and sw.status(link.a).up
    finally:
        sw.set_enabled(link.b, True)
        sw.close()


def test_drain_runbook_on_the_lab_switches(lab):
    te = TeController(lab.topology).start()
    sw = switches(lab)
    # the 2-spine lab leaves each leaf one uplink after a drain: 50 %, the default floor
    r = Rig(lab.topology, None, te.url, settings(), switches=sw)
    link = lab.topology.link_by_id["leaf1~spine2"]
    try:
        r.alerts(make_alert(entity=link.id))
        r.traffic(1, link.ends(), 200.0)
        r.tick(10)
        for t in (11, 12, 13):
            r.traffic(t, link.ends(), 0.0)
            r.tick(t)
        run = r.drainer.active[link.id]
        assert run.phase == Phase.DRAINED, r.records()[-1].detail
        assert sw.status(link.a).down and sw.status(link.b).down
        r.drainer.on_command(Repair(target=link.id, by="lab", action="reseated"), at(50))
        r.tick(50)
        assert run.phase == Phase.SOAK and sw.status(link.a).up
        for t in range(60, 121, 10):
            r.traffic(t, link.ends(), 100.0, dt=10)
            r.tick(t)
        assert run.phase == Phase.RESTORED and te.drained == set()
    finally:
        for end in link.ends():
            sw.set_enabled(end, True)
        sw.close()
        te.stop()


THREE_TIERS = """\
format: 1
name: remediation-agents-3tier
seed: 4
duration_s: 3600
sample_interval_s: 1
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 1, uplinks_per_pair: 1, link_gbps: 400,
         host_gbps: 400, zones: 2, aggs: 2, agg_uplinks_per_spine: 1}
routing: te
traffic:
  - {pattern: alltoall, hosts: all, load: 0.2, qps_per_flow: 2}
faults: []
"""


@pytest.fixture(scope="module")
def zoned_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from running_lab(tmp_path_factory, "lab3", THREE_TIERS)


def test_an_aggregation_link_drains_through_the_labs_te_controller(zoned_lab):
    """The lab's own TE controller moves cross-zone traffic off a spine's aggregation uplink
    (it computes paths across zones), the lab's spine and aggregation agents take the port
    down, and the run holds it in maintenance, as for a leaf's uplink."""
    lab = zoned_lab
    sw = switches(lab)
    link = lab.topology.link_by_id["agg1~z1-spine1"]
    r = Rig(lab.topology, None, lab.te_url, settings(), switches=sw)
    try:
        r.alerts(make_alert(entity=link.id))
        r.traffic(1, link.ends(), 200.0)
        r.tick(10)
        for t in (11, 12, 13):
            r.traffic(t, link.ends(), 0.0)
            r.tick(t)
        run = r.drainer.active[link.id]
        assert run.phase == Phase.DRAINED, r.records()[-1].detail
        assert sw.status(link.a).down and sw.status(link.b).down
        state = httpx.get(f"{lab.te_url}/v1/state", timeout=5).json()
        assert link.id in state["drained"]
        guards = {s["guard"] for s in run.steps if s["step"] == "guard"}
        assert {"capacity_spine_uplinks", "capacity_zone", "capacity_agg"} <= guards
    finally:
        for end in link.ends():
            sw.set_enabled(end, True)
        httpx.post(f"{lab.te_url}/v1/links/{link.id}/undrain",
                   json={"reason": "test over", "requested_by": "test"}, timeout=5)
        sw.close()
