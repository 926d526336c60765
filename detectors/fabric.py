"""The fabric side of detection: the symptoms active now → correlator → maintenance → alert book.

What happens after the per-device detectors have spoken needs the whole fabric's symptoms at
once: the correlator (:mod:`detectors.correlation.correlator`), the maintenance restatement
(:mod:`pipeline.maintenance`) and the alert book (:mod:`detectors.lifecycle`). One
:class:`FabricChain` holds them, so the one-process chain (:mod:`detectors.chain`) and the
partitioned correlator fed by other processes' symptoms (:mod:`detectors.partition.correlate`)
run exactly the same code on the same inputs: the symptoms, the event time and the fabric's
sample interval.
"""

from __future__ import annotations

from detectors.correlation.correlator import Correlator
from detectors.lifecycle import AlertBook
from detectors.settings import DetectionSettings
from pipeline.maintenance import MaintenanceBook
from pipeline.model import Alert
from pipeline.topology.model import Topology


class FabricChain:
    """Correlate, restate what maintenance explains, reconcile with what was published."""

    def __init__(self, settings: DetectionSettings, topology: Topology | None) -> None:
        self.correlator = Correlator(topology, settings.correlator)
        self.book = AlertBook(settings.update_every_s, settings.symptom_update_every_s)
        #: what remediation holds in maintenance (an input, like the topology): what it causes
        #: is restated as expected, never a root cause (pipeline.maintenance)
        self.maintenance = MaintenanceBook()
        #: root-cause incidents active after the last step
        self.incidents = 0

    def decide(self, symptoms: list[Alert], now_ns: int, interval_ns: int) -> list[Alert]:
        """The alert state changes (firing, updated, resolved) of one step."""
        alerts = self.maintenance.restate(
            self.correlator.correlate_at(symptoms, now_ns, interval_ns))
        self.incidents = sum(1 for a in alerts if a.root_cause)
        return self.book.reconcile(alerts, now_ns)
