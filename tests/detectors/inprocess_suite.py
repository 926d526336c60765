"""Score a folder of scenarios on the detection chain in process (a development tool, not a test:
``python -m tests.detectors.inprocess_suite FOLDER [FOLDER...] [--phase-seed N]`` prints one line
per run and the suite's table).

The scenario runner (``rocewatch scenario suite``) runs the whole platform and takes minutes per
run; this feeds the lab's simulation straight into the chain (:mod:`tests.detectors.simfeed`),
each switch sampled at its own phase of the interval (drawn from ``--phase-seed``, as on the real
path) and what arrives gathered into steps by the live engine's rule (:mod:`detectors.gather`).
The report and the score are the runner's own (:func:`rocewatch.scenario.runner.build_report`),
so the two read the same way; what the real path adds (agents, collectors, the bus, telemetry
health) is not here. Use it to see what a detector change does to a whole suite, before the real
path's run.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from detectors.chain import DetectionChain
from detectors.gather import Gathered as Steps
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from pipeline.model import Alert
from rocewatch.scenario.runner import Gathered, build_report
from rocewatch.scenario.scoring import SuiteTotals, score
from tests.detectors.simfeed import EPOCH_NS, SimFeed


def run_one(path: Path, phase_seed: int) -> dict[str, Any]:
    """The run report of one scenario file fed in process."""
    scenario = load_scenario(path)
    topo = scenario.topology()
    rng = random.Random(phase_seed)
    feed = SimFeed(scenario, phases={sw: rng.random() for sw in topo.switches})
    settings = DetectionSettings()
    chain = DetectionChain(settings, topo)
    interval_ns = round(scenario.sample_interval_s * 1e9)
    alerts: list[Alert] = []
    steps = Steps()
    for _t, batches in feed.run():
        if not batches:
            continue
        steps.add(batches, len(batches))
        if steps.due(settings.gather_intervals, interval_ns, len(chain.names.devices)):
            alerts.extend(chain.observe(steps.batches))
            steps = Steps()
    if steps.batches:
        alerts.extend(chain.observe(steps.batches))
    return build_report(scenario.name, scenario.sample_interval_s, topo, scenario.truth(),
                        Gathered(alerts=alerts), EPOCH_NS, scenario.duration_s)


def describe(report: dict[str, Any]) -> str:
    """One line: the run's score, its false root causes and its misses."""
    s = score(report)
    fps = ", ".join(f"{a['kind']} {a['entity']} @{float(a['first_s']):.1f}s"
                    for a in s.false_positives)
    missed = ", ".join(f"{t.kind} {t.target}" for t in s.truths if not t.detected)
    ttd = ", ".join(f"{t.kind} {t.ttd_s / s.sample_interval_s:.1f}" for t in s.truths
                    if t.ttd_s is not None)
    return (f"{report['scenario']}: roots {s.root_alerts}, matched {s.matched_alerts}; "
            f"ttd [{ttd}]" + (f"; FALSE {fps}" if fps else "")
            + (f"; MISSED {missed}" if missed else ""))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--phase-seed", type=int, default=1)
    args = parser.parse_args(argv)
    totals = SuiteTotals()
    for folder in args.folders:
        files = sorted(folder.glob("*.yaml")) if folder.is_dir() else [folder]
        for path in files:
            report = run_one(path, args.phase_seed)
            totals.add(report, score(report))
            print(describe(report), flush=True)
    print(f"runs {totals.runs}; faults {totals.truths}, detected {totals.detected}; root alerts "
          f"{totals.root_alerts}, matched {totals.matched_alerts}: precision "
          f"{totals.precision:.3f}, recall {totals.recall:.3f}, entity "
          f"{totals.entity_accuracy:.3f}; controls {totals.control_runs} with "
          f"{totals.control_false_positives} root alerts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
