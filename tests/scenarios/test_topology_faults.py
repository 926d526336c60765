"""A miswired cable and a dropped LLDP neighbour, found and named through the real path: the lab's
agents serve LLDP, the collectors read it, detection compares it with the declared topology, the
run report scores the ``topology_mismatch`` incident against the lab's truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocewatch.scenario.runner import run_scenario
from rocewatch.scenario.scoring import score

HERE = Path(__file__).parent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: the lab and the platform share two cores; at speed 5 a sample interval is 0.2 s of wall time,
#: and once in CI (load from the suite's services) the miswire's first report came 5 intervals
#: after it (2.2 under a busy core here): at 3 the three intervals are a second of wall time
SPEED = 3.0


def test_a_miswired_cable_is_found_and_named(chdb_dir: Path) -> None:
    report = run_scenario(HERE / "43-miswired-cable.yaml", speed=SPEED, chdb_path=chdb_dir)
    s = score(report)
    assert s.recall == 1.0, report["alerts"]
    assert s.precision == 1.0, s.false_positives
    (found,) = [a for a in report["alerts"] if a["root_cause"]]
    assert (found["kind"], found["entity"]) == ("topology_mismatch", "leaf1~spine1,leaf3~spine2")
    assert found["severity"] == "critical" and found["first_s"] >= 20
    assert len(found["ports"]) == 4
    # streamed ON_CHANGE from the gNMI ends, held two intervals: within three of the fault
    assert s.ttd_s["miswired_cable"] <= 3 * s.sample_interval_s, s.ttd_s


def test_a_dropped_neighbour_is_found_on_its_link_and_resolves(chdb_dir: Path) -> None:
    report = run_scenario(HERE / "44-lldp-neighbor-drop.yaml", speed=SPEED, chdb_path=chdb_dir)
    s = score(report)
    assert s.recall == 1.0 and s.precision == 1.0, report["alerts"]
    (found,) = [a for a in report["alerts"] if a["root_cause"]]
    assert (found["kind"], found["entity"]) == ("topology_mismatch", "leaf2~spine1")
    assert found["last_s"] < 150                       # resolved after the window
    assert s.ttd_s["lldp_neighbor_drop"] <= 3 * s.sample_interval_s, s.ttd_s   # streamed, held 2


def test_a_dropped_neighbour_on_snmp_agents_is_found_when_the_table_changes(
        chdb_dir: Path) -> None:
    """The collector reads LLDP-MIB as soon as ``lldpStatsRemTablesLastChangeTime`` moves, not
    only every LLDP interval (30 s): the drop is named within three intervals, as on gNMI."""
    report = run_scenario(HERE / "45-lldp-neighbor-drop-snmp.yaml", speed=SPEED,
                          chdb_path=chdb_dir)
    s = score(report)
    assert s.recall == 1.0 and s.precision == 1.0, report["alerts"]
    (found,) = [a for a in report["alerts"] if a["root_cause"]]
    assert (found["kind"], found["entity"]) == ("topology_mismatch", "leaf3~spine2")
    assert found["last_s"] < 80                        # resolved once the neighbour is back
    assert s.ttd_s["lldp_neighbor_drop"] <= 3 * s.sample_interval_s, s.ttd_s
