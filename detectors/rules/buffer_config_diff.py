"""Buffer configuration unlike the role's: a switch whose lossless thresholds differ from its peers.

Switches of one role (one tier of the fabric) run one buffer profile, so a lossless priority
group whose thresholds are set differently on one switch is a configuration mistake whatever the
load (anchors §6 #9: "config diff across switches of one role"), visible before any burst reaches
it — counters only show a lowered XOFF once bursts cross it (:mod:`pause_without_load`). The
collector reads each switch's thresholds as configuration (``pfc_xoff_bytes``, ``pfc_xon_bytes``,
``pfc_headroom_bytes`` per priority, ``ecn_kmin_bytes`` per queue: device-level samples on a slow
cadence, :mod:`collectors.gnmi.buffer_config`); this rule compares them, per priority:

* **too low for its role**: XOFF, XON or headroom below ``min_ratio`` of the median of the same
  value on its role peers (the other switches of its tier that report it). A low XOFF lets ordinary
  bursts cross it and pause the fabric at moderate load; a low headroom drops lossless traffic in
  flight after XOFF. Only the low side is judged: a switch *above* its peers is the only one of
  two that can be right about the bursts it absorbs, and two switches that disagree name the
  lower one;
* **PFC before ECN**: XOFF at or below the ECN ``Kmin`` of the queue the priority uses (queues are
  indexed by the priority they carry): the PG pauses before the queue ever marks, so DCQCN never
  gets to slow the senders down — an inverted pair of thresholds needs no peer to be wrong.

Configuration is exact, so one reading decides (``fire_after`` 1) and the symptom clears with
the first reading that is right again. A switch that serves no configuration (SNMP) is judged by
its counters alone.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import Detector, DetectorOptions, Symptoms
from detectors.features import Frame, cols
from detectors.ports import PortKind
from pipeline.kinds import BUFFER_CONFIG_DIFF
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology

THRESHOLDS = ("pfc_xoff_bytes", "pfc_xon_bytes", "pfc_headroom_bytes")


class BufferConfigDiffOptions(DetectorOptions):
    fire_after: int = Field(1, ge=1)
    clear_after: int = Field(1, ge=1)
    min_ratio: float = Field(0.5, gt=0, lt=1, description="share of the role's median")


class BufferConfigDiff(Detector):
    """Raises ``buffer_config_diff`` on a switch whose lossless thresholds are unlike its role's."""

    name = BUFFER_CONFIG_DIFF
    Options = BufferConfigDiffOptions
    symptom = BUFFER_CONFIG_DIFF

    def __init__(self, instance: str, options: BufferConfigDiffOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.symptoms = Symptoms(self.name)
        #: per device id: its thresholds (len(THRESHOLDS) × 8), its Kmin per queue, and when read
        self.config: dict[int, tuple[NDArray[np.float64], NDArray[np.float64], int]] = {}
        #: per device id: its role (as :meth:`_role` names it)
        self.roles: dict[int, str] = {}
        #: per role: bumped whenever a member's thresholds change (a reading that says what the
        #: last one said leaves every verdict of the role as it was)
        self.version: dict[str, int] = {}
        #: per device id: the role's version its verdict was last made on
        self.judged: dict[int, int] = {}

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        tab, ports = frame.table, frame.ports
        rows = frame.touched[ports.kind[frame.touched] == PortKind.DEVICE]
        fresh: set[int] = set()
        for pid in rows.tolist():
            ts = int(tab.ts[pid, cols("pfc_xoff_bytes")].max())
            did = int(ports.device_id[pid])
            last = self.config.get(did)
            if ts < 0 or (last is not None and ts <= last[2]):
                continue
            values = np.vstack([self._read(frame, pid, m) for m in THRESHOLDS])
            kmin = self._read(frame, pid, "ecn_kmin_bytes")
            self.config[did] = (values, kmin, ts)
            fresh.add(did)
            if last is None or not (np.array_equal(last[0], values, equal_nan=True)
                                    and np.array_equal(last[1], kmin, equal_nan=True)):
                role = self._role(frame, did)
                self.version[role] = self.version.get(role, 0) + 1
        if fresh:
            # a switch is judged against its role again only when some member's thresholds
            # changed; a reading that repeats the last one only restamps its own verdict (judging
            # every switch against every peer at each reading cost switches × peers per step)
            for did in self.config:
                version = self.version.get(self._role(frame, did), 0)
                if self.judged.get(did) != version:
                    self._judge(frame, did)
                    self.judged[did] = version
                elif did in fresh and did in self.symptoms.active:
                    self.symptoms.update(did, self.symptoms.active[did].evidence,
                                         self.config[did][2])
        return self.symptoms.alerts()

    @staticmethod
    def _read(frame: Frame, pid: int, metric: str) -> NDArray[np.float64]:
        c = cols(metric)
        have = frame.table.ts[pid, c] >= 0
        return np.where(have, frame.table.value[pid, c], np.nan)

    def _role(self, frame: Frame, did: int) -> str:
        known = self.roles.get(did)
        if known is not None:
            return known
        name = frame.ports.names.devices[did]
        role = self.topology.role(name) if self.topology is not None else None
        self.roles[did] = role = role or name.rstrip("0123456789")
        return role

    def _judge(self, frame: Frame, did: int) -> None:
        values, kmin, ts = self.config[did]
        role = self._role(frame, did)
        peers = [self.config[d][0] for d in self.config
                 if d != did and self._role(frame, d) == role]
        evidence: dict[str, float] = {}
        low = np.zeros(values.shape, bool)
        ref = np.full(values.shape, np.nan)
        if peers:
            stack = np.stack(peers)  # peers × thresholds × priorities
            some = np.isfinite(stack).any(axis=0)
            ref[some] = np.nanmedian(stack[:, some], axis=0)
            low = np.isfinite(values) & np.isfinite(ref) & (values < self.opts.min_ratio * ref)
            for i, metric in enumerate(THRESHOLDS):
                for prio in np.flatnonzero(low[i]).tolist():
                    evidence[f"{metric}@{prio}"] = float(values[i, prio])
                    evidence[f"peer_{metric}@{prio}"] = float(ref[i, prio])
        xoff = values[0]
        inverted = np.isfinite(xoff) & np.isfinite(kmin) & (xoff > 0) & (xoff <= kmin)
        for prio in np.flatnonzero(inverted).tolist():
            evidence[f"pfc_xoff_bytes@{prio}"] = float(xoff[prio])
            evidence[f"ecn_kmin_bytes@{prio}"] = float(kmin[prio])
        if not (low.any() or inverted.any()):
            self.symptoms.clear(did)
            return
        worst = [float(values[i, p] / ref[i, p]) for i, p in zip(*np.nonzero(low), strict=True)]
        evidence["ratio"] = min(worst, default=1.0)
        evidence["pfc_before_ecn"] = 1.0 if inverted.any() else 0.0
        evidence["peers"] = float(len(peers))
        device = frame.ports.names.devices[did]
        if did in self.symptoms.active:
            self.symptoms.update(did, evidence, ts)
            return
        self.symptoms.fire(did, name=BUFFER_CONFIG_DIFF, entity=device, ports=(),
                           labels={"device": device}, evidence=evidence, onset_ns=ts, ts_ns=ts,
                           severity=Severity.WARNING,
                           annotations={"summary": f"{device}'s lossless thresholds are unlike "
                                                   f"its role's ({role})"})

