"""Hand-built telemetry for detector tests: a tiny fabric whose counters integrate given rates.

``Feed`` keeps every port's counters and gauges; a test sets per-second *rates* (and gauges) on
ports, and ``tick()`` advances event time by one interval, integrates the rates into the counters
and returns one ``SampleBatch`` per switch — only the metrics the switch's profile serves, as a
collector would. Defaults give every port a calm 30 % load.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pytest

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from pipeline.metrics import CATALOG, IS_COUNTER, metric_id
from pipeline.model import Alert, SampleBatch
from pipeline.topology.model import Topology, spine_leaf

EPOCH = 1_700_000_000_000_000_000
LINE = 400e9
FRAME = 4150.0
QUAL_METRICS = {m.name for m in CATALOG if m.qualifier}
NO_TIMER = {"pfc_rx_pause_us", "pfc_tx_pause_us", "queue_occupancy_bytes"}
SNMP_NOT = {"queue_ecn_marked_pkts", "queue_watermark_bytes", "queue_occupancy_bytes",
            "if_carrier_transitions", "fec_corrected_blocks", "fec_uncorrectable_blocks"}
#: a port whose peer pauses priority 3 all the time while nothing leaves it (a stuck NIC behind it)
STUCK = {"pfc_rx_frames__3": 23842.0, "pfc_rx_pause_us__3": 1e6, "queue_tx_octets__3": 0.0,
         "queue_tx_pkts__3": 0.0, "if_out_octets": 0.0, "if_out_pkts": 0.0}


def calm(util: float = 0.3) -> dict[str, float]:
    """Rates of a port carrying ``util`` of line rate both ways on priority 3, nothing wrong."""
    octets = util * LINE / 8
    return {"if_in_octets": octets, "if_out_octets": octets, "if_in_pkts": octets / FRAME,
            "if_out_pkts": octets / FRAME, "queue_tx_octets@3": octets,
            "queue_tx_pkts@3": octets / FRAME, "queue_ecn_marked_pkts@3": 0.0,
            "pfc_rx_frames@3": 0.0, "pfc_tx_frames@3": 0.0, "pfc_rx_pause_us@3": 0.0,
            "pfc_tx_pause_us@3": 0.0, "if_in_fcs_errors": 0.0, "if_in_symbol_errors": 0.0,
            "if_carrier_transitions": 0.0, "if_oper_status": 1.0, "if_admin_status": 1.0,
            "queue_watermark_bytes@3": 100e3, "if_last_change": 0.0}


@dataclass
class Feed:
    topology: Topology
    interval: float = 1.0
    profile: str = "sonic"  # sonic (everything), openconfig (no pause timers), snmp
    t: float = 0.0
    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    counters: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    profiles: dict[str, str] = field(default_factory=dict)
    #: relative noise on every rate, as real traffic wanders (0 = perfectly flat)
    jitter: float = 0.0
    seed: int = 1
    #: event time of t = 0 (stores drop rows older than their retention: use a recent one there)
    epoch: int = EPOCH

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        for sw in self.topology.switches:
            for port in self.topology.ports(sw):
                self.rates[str(port)] = calm()

    def set(self, port: str, **values: float) -> None:
        """Set rates/gauges of a port; ``name`` or ``name@q`` for a priority/queue slot."""
        for key, v in values.items():
            self.rates[port][key.replace("__", "@")] = v

    def load(self, port: str, util: float) -> None:
        self.rates[port].update({k: v for k, v in calm(util).items()
                                 if k.startswith(("if_in_o", "if_out_o", "if_in_p", "if_out_p",
                                                  "queue_tx"))})

    def tick(self, dt: float | None = None) -> list[SampleBatch]:
        dt = self.interval if dt is None else dt
        self.t += dt
        ts = self.epoch + round(self.t * 1e9)
        out = []
        for sw in self.topology.switches:
            profile = self.profiles.get(sw, self.profile)
            rows: list[tuple[int, int, int, float, int]] = []
            names: list[str] = []
            for i, port in enumerate(self.topology.ports(sw)):
                names.append(port.name)
                for key, rate in self.rates[str(port)].items():
                    metric, _, q = key.partition("@")
                    if profile == "openconfig" and metric in NO_TIMER:
                        continue
                    if profile == "snmp" and metric in SNMP_NOT:
                        continue
                    code = metric_id(metric)
                    ckey = (str(port), key)
                    if IS_COUNTER[code]:
                        noise = self.jitter * float(self.rng.standard_normal())
                        self.counters[ckey] += max(rate * (1.0 + noise), 0.0) * dt
                        value = float(np.floor(self.counters[ckey]))
                    else:
                        value = rate
                    rows.append((i, code, int(q) if q else -1, value, 0))
            n = len(rows)
            arr = np.array(rows, dtype=np.float64).reshape(n, 5)
            out.append(SampleBatch(
                np.full(n, ts, np.int64), np.zeros(n, np.int32), arr[:, 0].astype(np.int32),
                arr[:, 1].astype(np.uint16), arr[:, 2].astype(np.int16), arr[:, 3].copy(),
                arr[:, 4].astype(np.uint8), (sw,), tuple(names)))
        return out


def small() -> Topology:
    """2 spines, 2 leaves, 2 hosts per leaf: host1..4; leaf ports Ethernet1-2 hosts, 3-4 up."""
    return spine_leaf(2, 2, 2)


@pytest.fixture
def topo() -> Topology:
    return small()


@pytest.fixture
def feed(topo: Topology) -> Feed:
    return Feed(topo)


def chain_of(topo: Topology, *names: str) -> DetectionChain:
    """A chain with only the named detector plugins (all of them when none are named)."""
    from pipeline.config import PluginSpec

    specs = tuple(PluginSpec(type=n) for n in names)
    return DetectionChain(DetectionSettings(detectors=specs), topo)


def run(chain: DetectionChain, feed: Feed, ticks: int) -> list[Alert]:
    out: list[Alert] = []
    for _ in range(ticks):
        out.extend(chain.observe(feed.tick()))
    return out


def active(chain: DetectionChain) -> dict[tuple[str, str], Alert]:
    """What is firing now, by (name, entity)."""
    return {(a.name, a.entity): a for a in chain.book.active()}


def at_s(ns: int) -> float:
    return (ns - EPOCH) / 1e9
