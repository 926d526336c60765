"""The names the platform speaks: fault kinds, incident kinds and symptom names, and which incident
each fault should produce.

Three vocabularies, each named once here and imported by everyone who says them (the lab, the
detectors, remediation, the API and dashboard, the scenario runner and scorer):

* **fault kinds** are the scenario format's (``shared/scenarios/README.md``): what the lab injects;
* **incident kinds** are root causes, named exactly as the format says the platform should report
  them (:data:`FAULT_TO_INCIDENT` is that table's last column);
* **symptoms** are what per-port and per-switch detectors see, named after the observation, not
  the cause (a paused port is a symptom; what paused it is the incident). A detector, its module
  and its entry point are named after the symptom it raises;
* **runbook actions** are what remediation's guarded runbooks are called in the audit trail
  (what the store's ``drains`` view selects).

Several fault kinds and incident kinds share a spelling (an injected ``pfc_storm`` should be
reported as a ``pfc_storm``); they are still different names, so each has its own constant.
"""

from __future__ import annotations

from typing import Final

# -- fault kinds (the scenario format's: what the lab injects) ------------------------------
FAULT_PFC_STORM: Final = "pfc_storm"
FAULT_INCAST: Final = "incast"
FAULT_SLOW_RECEIVER: Final = "slow_receiver"
FAULT_LINK_CORRUPTION: Final = "link_corruption"
FAULT_LINK_FLAP: Final = "link_flap"
FAULT_OPTICS_DEGRADE: Final = "optics_degrade"
FAULT_ECMP_COLLISION: Final = "ecmp_collision"
FAULT_BUFFER_MISCONFIG: Final = "buffer_misconfig"
FAULT_PFC_DEADLOCK: Final = "pfc_deadlock"
FAULT_LINK_DOWN: Final = "link_down"
# the lab's own kinds beyond the format's table (docs/lab.md, "Topology faults"): they change
# only what the devices say over LLDP, never the wiring the simulation runs
FAULT_MISWIRED_CABLE: Final = "miswired_cable"
FAULT_LLDP_NEIGHBOR_DROP: Final = "lldp_neighbor_drop"

#: faults whose target is a host, and faults whose target is a link (or a host's link)
HOST_FAULTS: Final = frozenset({FAULT_PFC_STORM, FAULT_INCAST, FAULT_SLOW_RECEIVER})
LINK_FAULTS: Final = frozenset({FAULT_LINK_CORRUPTION, FAULT_LINK_FLAP, FAULT_OPTICS_DEGRADE,
                                FAULT_LINK_DOWN})
#: faults that change what LLDP says about a switch-to-switch link, not the link
TOPOLOGY_FAULTS: Final = frozenset({FAULT_MISWIRED_CABLE, FAULT_LLDP_NEIGHBOR_DROP})

# -- incident kinds (root causes) -------------------------------------------------------------
PFC_STORM: Final = "pfc_storm"
INCAST: Final = "incast"
SLOW_RECEIVER: Final = "slow_receiver"
FAULTY_LINK: Final = "faulty_link"
LINK_FLAP: Final = "link_flap"
LINK_DOWN: Final = "link_down"
ECMP_IMBALANCE: Final = "ecmp_imbalance"
BUFFER_MISCONFIG: Final = "buffer_misconfig"
PFC_DEADLOCK: Final = "pfc_deadlock"
NO_DATA: Final = "no_data"
#: the devices' LLDP contradicts the declared topology: a miswired cable (several links,
#: comma-joined), a declared link no end sees, one only one end sees, or a link not declared
TOPOLOGY_MISMATCH: Final = "topology_mismatch"

INCIDENT_KINDS: Final = (PFC_STORM, INCAST, SLOW_RECEIVER, FAULTY_LINK, LINK_FLAP, LINK_DOWN,
                         ECMP_IMBALANCE, BUFFER_MISCONFIG, PFC_DEADLOCK, TOPOLOGY_MISMATCH)
#: incidents on a link (a drain's candidates)
LINK_INCIDENTS: Final = frozenset({FAULTY_LINK, LINK_FLAP, LINK_DOWN})

#: scenario fault kind → the incident kind the platform should report for it (the format's table)
FAULT_TO_INCIDENT: Final = {
    FAULT_PFC_STORM: PFC_STORM,
    FAULT_INCAST: INCAST,
    FAULT_SLOW_RECEIVER: SLOW_RECEIVER,
    FAULT_LINK_CORRUPTION: FAULTY_LINK,
    FAULT_LINK_FLAP: LINK_FLAP,
    FAULT_OPTICS_DEGRADE: FAULTY_LINK,
    FAULT_ECMP_COLLISION: ECMP_IMBALANCE,
    FAULT_BUFFER_MISCONFIG: BUFFER_MISCONFIG,
    FAULT_PFC_DEADLOCK: PFC_DEADLOCK,
    FAULT_LINK_DOWN: LINK_DOWN,
    FAULT_MISWIRED_CABLE: TOPOLOGY_MISMATCH,
    FAULT_LLDP_NEIGHBOR_DROP: TOPOLOGY_MISMATCH,
}
#: every fault kind a scenario may inject, in the format's order, then the lab's own
FAULT_KINDS: Final = tuple(FAULT_TO_INCIDENT)
#: the kinds of the format's table (``shared/scenarios/README.md``)
FORMAT_FAULT_KINDS: Final = tuple(k for k in FAULT_KINDS if k not in TOPOLOGY_FAULTS)

# -- symptoms (per port or per device) -----------------------------------------------------
PFC_WATCHDOG: Final = "pfc_watchdog"  # paused by the peer without draining (a stuck queue)
PFC_HOLD: Final = "pfc_hold"  # a fabric port stuck like a storm, persistently (deadlock member)
PFC_PAUSED: Final = "pfc_paused"  # paused by the peer a large share of the time, still draining
PFC_PAUSING: Final = "pfc_pausing"  # pausing the peer a large share of the time
QUEUE_BUILDUP: Final = "queue_buildup"  # egress queue deep / ECN marking heavily
EGRESS_OVERSUBSCRIBED: Final = "egress_oversubscribed"  # egress at line rate, demand far above
HOST_SLOW_DRAIN: Final = "host_slow_drain"  # a host pausing while it takes less than line rate
FCS_ERRORS: Final = "fcs_errors"  # frames arriving corrupted
OPTICS_TREND: Final = "optics_trend"  # symbol / FEC errors rising before frames corrupt
CARRIER_FLAP: Final = "carrier_flap"  # the port went down and came back
PORT_DOWN: Final = "port_down"  # operationally down while administratively up
UPLINK_IMBALANCE: Final = "uplink_imbalance"  # a leaf's ECMP group unevenly loaded
PAUSE_WITHOUT_LOAD: Final = "pause_without_load"  # a switch pausing with no overload or ECN
ANOMALY: Final = "anomaly"  # learned: a port unlike its own baseline
BUFFER_CONFIG_DIFF: Final = "buffer_config_diff"  # lossless thresholds unlike the role's (config)
# NO_DATA above is both: a symptom of a silent device, and what the platform reports for it

SYMPTOMS: Final = (PFC_WATCHDOG, PFC_HOLD, PFC_PAUSED, PFC_PAUSING, QUEUE_BUILDUP,
                   EGRESS_OVERSUBSCRIBED, HOST_SLOW_DRAIN, FCS_ERRORS, OPTICS_TREND, CARRIER_FLAP,
                   PORT_DOWN, UPLINK_IMBALANCE, PAUSE_WITHOUT_LOAD, ANOMALY, NO_DATA,
                   BUFFER_CONFIG_DIFF)
#: symptoms that say a port's egress is held back by its peer
PAUSED_SYMPTOMS: Final = frozenset({PFC_WATCHDOG, PFC_HOLD, PFC_PAUSED})
#: symptoms that say a port's egress is congested by its own load
CONGESTED_SYMPTOMS: Final = frozenset({QUEUE_BUILDUP, EGRESS_OVERSUBSCRIBED})

# -- runbook actions (remediation's audit trail) --------------------------------------------
DRAIN: Final = "drain"
UNDRAIN: Final = "undrain"
ISOLATE: Final = "isolate"
RESTORE: Final = "restore"
#: per runbook, its action before the repair and the one that undoes it after
RUNBOOK_ACTIONS: Final = {DRAIN: (DRAIN, UNDRAIN), ISOLATE: (ISOLATE, RESTORE)}
#: every action a runbook records
RUNBOOK_ACTION_NAMES: Final = tuple(a for pair in RUNBOOK_ACTIONS.values() for a in pair)
