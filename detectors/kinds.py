"""The names detection speaks: incident kinds (the scenario format's) and symptom names.

Incidents are root causes, named exactly as ``shared/scenarios/README.md`` says the platform should
report them; symptoms are what per-port detectors see, named after the observation, not the cause
(a paused port is a symptom; what paused it is the incident).
"""

from __future__ import annotations

from typing import Final

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

INCIDENT_KINDS: Final = (PFC_STORM, INCAST, SLOW_RECEIVER, FAULTY_LINK, LINK_FLAP, LINK_DOWN,
                         ECMP_IMBALANCE, BUFFER_MISCONFIG, PFC_DEADLOCK)

#: scenario fault kind → the incident kind the platform should report for it
FAULT_TO_INCIDENT: Final = {
    "pfc_storm": PFC_STORM,
    "incast": INCAST,
    "slow_receiver": SLOW_RECEIVER,
    "link_corruption": FAULTY_LINK,
    "optics_degrade": FAULTY_LINK,
    "link_flap": LINK_FLAP,
    "link_down": LINK_DOWN,
    "ecmp_collision": ECMP_IMBALANCE,
    "buffer_misconfig": BUFFER_MISCONFIG,
    "pfc_deadlock": PFC_DEADLOCK,
}

# -- symptoms (per port or per device) -----------------------------------------------------
PFC_WATCHDOG: Final = "pfc_watchdog"  # paused by the peer without draining (a stuck queue)
PFC_HOLD: Final = "pfc_hold"  # a fabric port stuck like a storm, persistently (deadlock member)
PFC_PAUSED: Final = "pfc_paused"  # paused by the peer a large share of the time, still draining
PFC_PAUSING: Final = "pfc_pausing"  # pausing the peer a large share of the time
QUEUE_BUILDUP: Final = "queue_buildup"  # egress queue deep / ECN marking heavily
OVERSUBSCRIBED: Final = "egress_oversubscribed"  # egress at line rate, demand far above it
SLOW_DRAIN: Final = "host_slow_drain"  # a host pausing while it takes less than line rate
FCS_ERRORS: Final = "fcs_errors"  # frames arriving corrupted
OPTICS_TREND: Final = "optics_trend"  # symbol / FEC errors rising before frames corrupt
CARRIER_FLAP: Final = "carrier_flap"  # the port went down and came back
PORT_DOWN: Final = "port_down"  # operationally down while administratively up
UPLINK_IMBALANCE: Final = "uplink_imbalance"  # a leaf's ECMP group unevenly loaded
PAUSE_WITHOUT_LOAD: Final = "pause_without_load"  # a switch pausing with no overload or ECN
ANOMALY: Final = "anomaly"  # learned: a port unlike its own baseline

#: symptoms that say a port's egress is held back by its peer
PAUSED_SYMPTOMS: Final = frozenset({PFC_WATCHDOG, PFC_HOLD, PFC_PAUSED})
#: symptoms that say a port's egress is congested by its own load
CONGESTED_SYMPTOMS: Final = frozenset({QUEUE_BUILDUP, OVERSUBSCRIBED})
