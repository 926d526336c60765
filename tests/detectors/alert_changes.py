"""Every alert change of the one-zone bench fabric and of 28 scenarios, fed in process, as JSON
lines (a development tool, not a test: ``python -m tests.detectors.alert_changes OUT`` writes
the file and prints its SHA-256).

A change to detection that must not change its answers (a speed-up) is checked by running this
on the trees before and after, from the same commit of everything else, and comparing the files
byte for byte: every field of every change, step by step. The bench fabric is
:mod:`tests.detectors.lab_detect_bench`'s (one zone, its 6 + 10 intervals); the scenarios are
storms, incasts, slow receivers, corruption, optics, flaps, links down, collisions, buffer
misconfigurations, deadlocks on two and three tiers, a miswired cable and controls. Each is fed
as :mod:`tests.detectors.inprocess_suite` feeds one (phases from seed 1, the live engine's
gathering).
"""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import yaml

from detectors.chain import DetectionChain
from detectors.gather import Gathered
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from tests.detectors.lab_detect_bench import REFERENCE, WARM_INTERVALS
from tests.detectors.simfeed import SimFeed

ROOT = Path(__file__).resolve().parents[2]
#: the public scenarios (``tests/scenarios``, by number) whose changes are written
NUMBERS = ("01", "02", "03", "04", "05", "07", "09", "10", "11", "13", "14", "15", "16", "17",
           "19", "20", "21", "23", "29", "31", "33", "36", "37", "39", "40", "43")
SHARED = ("collision-leaf4.yaml", "pfc-storm-host12.yaml")


def bench_fabric(intervals: int = 10) -> Any:
    """The one-zone bench fabric, faults removed."""
    data = yaml.safe_load(REFERENCE.read_text())
    data["fabric"]["zones"] = 1
    data["faults"] = []
    data["duration_s"] = float(data["sample_interval_s"]) * (WARM_INTERVALS + intervals)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "fabric.yaml"
        path.write_text(yaml.safe_dump(data))
        return load_scenario(path)


def write_changes(scenario: Any, label: str, out: IO[str]) -> tuple[int, int]:
    """Feed one scenario through a fresh chain, each step's changes under a ``# label step N``
    line; returns (steps, changes)."""
    topo = scenario.topology()
    rng = random.Random(1)
    feed = SimFeed(scenario, phases={sw: rng.random() for sw in topo.switches})
    settings = DetectionSettings()
    chain = DetectionChain(settings, topo)
    interval_ns = round(scenario.sample_interval_s * 1e9)
    steps, changes, gathered = 0, 0, Gathered()

    def step() -> None:
        nonlocal steps, changes
        out.write(f"# {label} step {steps}\n")
        for alert in chain.observe(gathered.batches):
            out.write(alert.model_dump_json() + "\n")
            changes += 1
        steps += 1

    for _t, batches in feed.run():
        if not batches:
            continue
        gathered.add(batches, len(batches))
        if gathered.due(settings.gather_intervals, interval_ns, len(chain.names.devices)):
            step()
            gathered = Gathered()
    if gathered.batches:
        step()
    return steps, changes


def main(dest: Path) -> str:
    files = [p for p in sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))
             if p.name[:2] in NUMBERS]
    files += [ROOT / "tests" / "lab" / "scenarios" / name for name in SHARED]
    with dest.open("w") as out:
        print("bench", write_changes(bench_fabric(), "bench", out), flush=True)
        for path in files:
            print(path.name, write_changes(load_scenario(path), path.name, out), flush=True)
    return hashlib.sha256(dest.read_bytes()).hexdigest()


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
