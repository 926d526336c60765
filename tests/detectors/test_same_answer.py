"""Same scenario, same answer (issue 10.6): what is found, and when, does not depend on when each
switch happens to be sampled or on how the samples are batched on their way to detection.

On the real path every agent keeps the phase its session started with, so each run samples the
switches at other moments of the interval, and the detect loop polls whatever has arrived. Both
are wall-clock accidents. The in-process test replays one scenario with three different sets of
phases and arrival batches; the real-path test runs one scenario three times through the lab's
agents, the collectors and the whole platform. Either way the root incidents, their entities and
their times must agree to within one sample interval.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from rocewatch.scenario.runner import Gathered, build_report
from rocewatch.scenario.scoring import score
from tests.detectors.simfeed import EPOCH_NS, SimFeed

pytestmark = pytest.mark.slow

#: a storm, a corruption and an incast on a fabric of every dialect, gNMI and SNMP
SCENARIO = """
format: 1
name: same-answer
seed: 41
duration_s: 100
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 4
  hosts_per_leaf: 3
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {gnmi: 0.75, snmp: 0.25}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {pattern: allreduce, hosts: all, load: 0.4, qps_per_flow: 2}
faults:
  - {kind: pfc_storm, target: host2, at_s: 30.4, until_s: 60, params: {priority: 3}}
  - {kind: link_corruption, target: leaf3~spine2, at_s: 35.7, until_s: 80,
     params: {rate: 1.0e-4, direction: a_to_b}}
  - {kind: incast, target: host11, at_s: 65.2, until_s: 85, params: {fan_in: 4}}
"""


def _file(tmp: Path) -> Path:
    path = tmp / "same-answer.yaml"
    path.write_text(SCENARIO)
    return path


def _roots(report: dict[str, Any]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for a in report["alerts"]:
        if a["root_cause"]:
            key = (a["kind"], a["entity"])
            out[key] = min(out.get(key, a["first_s"]), a["first_s"])
    return out


def _agree(runs: list[dict[str, Any]], interval: float) -> None:
    found = [_roots(r) for r in runs]
    assert all(f.keys() == found[0].keys() for f in found), found
    for key in found[0]:
        times = [f[key] for f in found]
        assert max(times) - min(times) <= interval, (key, times)
    for r in runs:
        s = score(r)
        assert s.recall == 1.0 and s.precision == 1.0, r["alerts"]


def _phased(path: Path, seed: int) -> dict[str, Any]:
    scenario = load_scenario(path)
    rng = random.Random(seed)
    phases = {sw: rng.random() for sw in scenario.topology().switches}
    chain = DetectionChain(DetectionSettings(), scenario.topology())
    interval = scenario.sample_interval_s
    poll = rng.uniform(0.1, 0.6) * interval  # the detect loop's polls: what arrived by then
    alerts, pending, edge = [], [], 0.0
    for t, batches in SimFeed(scenario, phases=phases).run():
        if t > edge + poll:
            alerts.extend(chain.observe(pending))
            pending, edge = [], t
        pending.extend(batches)
    alerts.extend(chain.observe(pending))
    return build_report(scenario.name, interval, scenario.topology(), scenario.truth(),
                        Gathered(alerts=alerts), EPOCH_NS, scenario.duration_s)


def test_sample_phases_and_batching_do_not_change_what_is_found_or_when(tmp_path: Path) -> None:
    path = _file(tmp_path)
    _agree([_phased(path, seed) for seed in (1, 2, 3)], load_scenario(path).sample_interval_s)


def test_one_scenario_run_three_times_through_the_platform_gives_one_answer(
        tmp_path: Path) -> None:
    from rocewatch.scenario.runner import run_scenario

    path = _file(tmp_path)
    runs = [run_scenario(path, speed=4.0) for _ in range(3)]
    _agree(runs, load_scenario(path).sample_interval_s)
