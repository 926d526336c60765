"""Detection's CPU per sample interval on the lab's own physics, in process (a benchmark, not a
test: ``python -m tests.detectors.lab_detect_bench ZONES [INTERVALS]`` prints one line).

``rocewatch bench detect`` streams synthetic counters with one incident, so its fabric keeps few
symptoms; the lab's healthy AllReduce at 60 % keeps thousands (ports pausing, queues building),
and those are what the correlator, the pause graph and the alert book work through at every
step. Here the 24,576-GPU reference scenario, resized to ``ZONES`` zones and with its faults
removed, is simulated in process (:mod:`tests.detectors.simfeed`); each switch is sampled at its
own phase of the interval, as on the real path, and what arrives is gathered into steps by the
live engine's rule (:mod:`detectors.gather`, one arrival per poll), with the cycle collector's
policy the detect role runs with (:mod:`pipeline.heap`). Printed: steps per interval
and CPU of ``DetectionChain.observe`` per interval after six intervals of warm-up, and the alerts
active at the end.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import yaml

from detectors.chain import DetectionChain
from detectors.gather import Gathered
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from pipeline import heap
from tests.detectors.simfeed import SimFeed

REFERENCE = Path(__file__).resolve().parents[2] / "lab" / "reference" / "reference-24k.yaml"
WARM_INTERVALS = 6


def measure(zones: int, intervals: int) -> str:
    data = yaml.safe_load(REFERENCE.read_text())
    data["fabric"]["zones"] = zones
    data["faults"] = []
    interval_s = float(data["sample_interval_s"])
    data["duration_s"] = interval_s * (WARM_INTERVALS + intervals)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "fabric.yaml"
        path.write_text(yaml.safe_dump(data))
        scenario = load_scenario(path)
    topo = scenario.topology()
    rng = random.Random(1)
    feed = SimFeed(scenario, phases={sw: rng.random() for sw in topo.switches})
    settings = DetectionSettings()
    chain = DetectionChain(settings, topo)
    heap.settle()  # as the detect role does once its engine is built (pipeline.heap)
    interval_ns = round(interval_s * 1e9)
    warm_s = WARM_INTERVALS * interval_s
    gathered, cpu, steps, last_t = Gathered(), 0.0, 0, 0.0
    for t, batches in feed.run():
        if not batches:
            continue
        gathered.add(batches, len(batches))
        last_t = t
        if not gathered.due(settings.gather_intervals, interval_ns, len(chain.names.devices)):
            continue
        start = time.process_time()
        chain.observe(gathered.batches)
        if t >= warm_s:
            cpu += time.process_time() - start
            steps += 1
        gathered = Gathered()
    measured = (last_t - warm_s) / interval_s
    return (f"zones {zones}: {len(topo.switches)} switches, {topo.n_switch_ports:,} ports; "
            f"{measured:.1f} intervals after warm-up, {steps / measured:.2f} steps per interval, "
            f"{cpu / measured * 1e3:.0f} ms CPU per interval; "
            f"{len(chain.book.active()):,} alerts active")


if __name__ == "__main__":
    heap.enable()  # this process runs as a rocewatch process does
    print(measure(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10))
