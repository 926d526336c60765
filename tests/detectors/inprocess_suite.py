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

import numpy as np

from detectors.chain import DetectionChain
from detectors.gather import Gathered as Steps
from detectors.rules.optics_trend import OpticsTrendOptions
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from pipeline.metrics import metric_id
from pipeline.model import Alert, SampleBatch
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
    crossings = OpticsCrossings(scenario, topo)
    for _t, batches in feed.run():
        if not batches:
            continue
        crossings.observe(batches)
        steps.add(batches, len(batches))
        if steps.due(settings.gather_intervals, interval_ns, len(chain.names.devices)):
            alerts.extend(chain.observe(steps.batches))
            steps = Steps()
    if steps.batches:
        alerts.extend(chain.observe(steps.batches))
    report = build_report(scenario.name, scenario.sample_interval_s, topo, scenario.truth(),
                          Gathered(alerts=alerts), EPOCH_NS, scenario.duration_s)
    report["optics_crossed_s"] = crossings.crossed_s
    return report


class OpticsCrossings:
    """When each ``optics_degrade`` fault's symbol error rate crosses the optics detector's own
    threshold on either end of its link: ``min_errors`` PCS symbol errors per sample above the
    port's normal (a healthy lab link has none, so its learned normal is 0 and ``step`` times it
    is no bar). Errors come as counts, so the rate is read as the mean over ``window`` samples
    from each one on: the crossing is the first sample after the fault's start that counts
    ``min_errors`` and from which that mean reaches ``min_errors`` (a link that carries no
    frames counts none, however bad its optics: its crossing is when traffic comes). Issue 10
    measures a trend kind's time to detect from there."""

    def __init__(self, scenario: Any, topo: Any) -> None:
        options = OpticsTrendOptions()
        self.min_errors, self.window = options.min_errors, options.window
        self.metric = metric_id("if_in_symbol_errors")
        #: (device, port) -> (fault target, fault start in s)
        self.watched: dict[tuple[str, str], tuple[str, float]] = {}
        for f in scenario.faults:
            if f.kind == "optics_degrade":
                a, _, b = f.target.partition("~")
                for link in topo.links_between(a, b):
                    for end in link.ends():
                        self.watched[(end.device, end.name)] = (f.target, f.at_s)
        self.last: dict[tuple[str, str], float] = {}
        #: (device, port) -> [(time s, symbol errors in the sample)] from the fault's start on
        self.series: dict[tuple[str, str], list[tuple[float, float]]] = {}

    def observe(self, batches: list[SampleBatch]) -> None:
        if not self.watched:
            return
        for b in batches:
            for i in np.flatnonzero(b.metric == self.metric):
                key = (b.devices[b.device[i]], b.ports[b.port[i]])
                if key not in self.watched:
                    continue
                value, before = float(b.value[i]), self.last.get(key)
                self.last[key] = value
                t = (int(b.ts_ns[i]) - EPOCH_NS) / 1e9
                if before is not None and t >= self.watched[key][1]:
                    self.series.setdefault(key, []).append((t, value - before))

    @property
    def crossed_s(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, points in self.series.items():
            counts = np.array([n for _, n in points])
            for i in range(len(points) - self.window + 1):
                if counts[i] >= self.min_errors \
                        and counts[i:i + self.window].mean() >= self.min_errors:
                    target = self.watched[key][0]
                    out[target] = min(out.get(target, points[i][0]), points[i][0])
                    break
        return out


def describe(report: dict[str, Any]) -> str:
    """One line: the run's score, its false root causes and its misses."""
    s = score(report)
    fps = ", ".join(f"{a['kind']} {a['entity']} @{float(a['first_s']):.1f}s"
                    for a in s.false_positives)
    missed = ", ".join(f"{t.kind} {t.target}" for t in s.truths if not t.detected)
    crossed = report.get("optics_crossed_s", {})

    def from_crossing(t: Any) -> str:
        if t.kind != "optics_degrade" or t.target not in crossed:
            return ""
        after = (t.start_s + t.ttd_s - crossed[t.target]) / s.sample_interval_s
        return f" (threshold crossed at {crossed[t.target]:.1f}s: {after:.1f} from there)"

    ttd = ", ".join(f"{t.kind} {t.ttd_s / s.sample_interval_s:.1f}{from_crossing(t)}"
                    for t in s.truths if t.ttd_s is not None)
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
