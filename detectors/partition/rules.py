"""Which detectors compare devices with each other, and so run on the correlator's side.

A detect worker sees only the devices of its samples partitions, so a rule whose verdict on one
switch depends on other switches' data would judge each switch against the wrong peers. Every
rule of :mod:`detectors.rules` was checked for inputs from other devices:

* ``buffer_config_diff`` compares a switch's lossless thresholds with its role peers' (median):
  cross-device; it reads only device-level configuration (a few rows per switch, slow cadence);
* ``pause_without_load`` compares a switch's pausing, load and ECN with its role peers'
  (medians over the role's latest summaries): cross-device; it reads the switch's pause, octet,
  speed and per-queue counters;
* ``no_data`` judges silence against the event-time watermark, the newest sample time of the
  devices the process reads: on a worker, the newest of its own devices. It stays on the worker
  (a worker whose every device fell silent at once declares none of them silent: see
  docs/deploy.md);
* every other rule (``anomaly``, ``egress_oversubscribed``, ``fcs_errors``, ``host_slow_drain``,
  ``link_state``, ``optics_trend``, ``pfc_*``, ``queue_buildup``, ``uplink_imbalance``) reads one
  port, or the ports of one switch, and the static topology: per device.

``buffer_config_diff`` runs unchanged on the correlator's side, in a chain of its own
(:class:`detectors.partition.correlate.FabricRules`), fed with the rows of the metrics it reads,
which the workers forward in their reports (:mod:`pipeline.wire.symptoms`): configuration is a
few rows per switch on a slow cadence. ``pause_without_load`` reads too much for that (the
switches' pause, octet and per-queue counters, nearly half of their rows), so it is split at its
per-switch summary (:mod:`detectors.partition.pause`): the worker sums each switch up, the
correlator judges the summaries against the peers'. Either way the same code on the same samples
gives the same answers as one process.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipeline.config import PluginSpec
from pipeline.kinds import BUFFER_CONFIG_DIFF, PAUSE_WITHOUT_LOAD
from pipeline.metrics import metric_id

#: detector plugin → the metrics it reads (forwarded by the workers to the correlator's side)
FABRIC_RULES: dict[str, tuple[str, ...]] = {
    BUFFER_CONFIG_DIFF: ("pfc_xoff_bytes", "pfc_xon_bytes", "pfc_headroom_bytes",
                         "ecn_kmin_bytes"),
}
#: detector plugins split at a per-switch summary: summed up on the workers, judged on the
#: correlator's side (detectors.partition.pause)
SUMMARIZED_RULES = frozenset({PAUSE_WITHOUT_LOAD})


def on_fabric_side(spec: PluginSpec) -> bool:
    """Whether a configured detector runs on the correlator's side on forwarded rows."""
    return spec.type in FABRIC_RULES


def summarized(spec: PluginSpec) -> bool:
    """Whether a configured detector is split at its per-switch summary."""
    return spec.type in SUMMARIZED_RULES


def forwarded_metrics(specs: tuple[PluginSpec, ...]) -> NDArray[np.uint16]:
    """The metric codes the workers forward for the configured fabric-side rules."""
    names = {m for s in specs if on_fabric_side(s) for m in FABRIC_RULES[s.type]}
    return np.array(sorted(metric_id(m) for m in names), np.uint16)
