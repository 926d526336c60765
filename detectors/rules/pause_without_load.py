"""Buffer misconfiguration: a switch that pauses its neighbours with no overload behind it.

A lossless priority group sends XOFF when the bytes it holds cross its threshold. Sized for the
link's bandwidth-delay product plus burst absorption (hundreds of KB at 400G), that threshold is
out of reach of micro-bursts until the traffic's egress nears saturation, and ECN (marking from
``Kmin``, set below XOFF) acts first (DCQCN, Zhu et al. SIGCOMM'15). A threshold set far too low
lets ordinary bursts cross it: the switch pauses at moderate load, without the standing queues
that real congestion leaves (anchors §6 #9: "PFC fires before ECN"; "config diff across switches
of one role"). Switches of one role run the same configuration, so the one configured differently
stands out against its peers. Two signatures, per switch and sample:

**Unlike its peers, for no reason** (any dialect):

* *pausing*: it paused a neighbour for at least ``min_share`` of the time on some port. Where the
  switch only counts frames, the frame bound (frames × refresh, :func:`signals.pause_share`) is
  divided by ``frame_overstatement``: a short XOFF/XON episode lasts about as long as draining the
  XON hysteresis at line rate, tens of KB, while the bound books a whole refresh (half of the
  65535-quanta pause, 4 MB of line time) per frame — a ratio of 50 to 100 for the XON offsets
  switches ship with; the smallest keeps the estimate an upper bound;
* *unlike*: its pausing averaged over its ports (a misconfigured threshold is crossed on every busy
  port, not only behind the hottest egress) is at least ``peer_factor`` times the median of its
  comparable peers' and at least what healthy bursts cause at its load (``min_share`` at
  ``burst_load``, 80 %, where burst pauses stop being negligible). A burst queue at load ρ stands
  above a depth X a share ρ · exp(−(1 − ρ) X / b) of the time (bursts of mean b: the queue's
  exponential tail, Kingman's heavy-traffic form), so healthy burst pauses rise steeply and
  monotonically with the load of the egress a PG drains into (from 0.1 % at 80 % to ~3 % at 90 %
  and ~6 % at 92 % with X / b fixed by that anchor), and a lowered XOFF (a smaller X) shows most
  clearly at moderate load: a peer is comparable when its headroom (1 −
  busiest egress utilisation) is at most ``headroom_ratio`` times the switch's own (as loaded, or
  nearly), and it is not saturated itself (a saturated switch is congested by its own load: its PGs
  reflect its standing queues, not bursts). Where every unsaturated peer has more headroom (the
  switch is its role's hottest: a busier job's leaf), the burst model alone sets the scale, with
  the peer's margin: at least ``peer_factor`` times the allowance at its own load (and times
  ``min_share``), where the switch times its pauses (a frame bound overstates the time the model
  speaks of). Without an unsaturated peer nothing is judged;
* *no reason*: none of its egress ports is paused by its downstream neighbour (it is not passing
  on somebody else's congestion), none holds a standing queue (ECN on ``min_ecn`` of its packets)
  or runs saturated (``max_util``).

**PFC before ECN** (where ECN is reported): a PG only reaches a sane XOFF once that many bytes
queue at the egress its traffic waits for, far above ``Kmin``, so a healthy switch that pauses
marks ECN on that egress at least at the RED probability of its XOFF depth. A switch pausing at
least ``ecn_pause`` of the time whose busiest ECN marking (on queues that still send) is below
``1 / peer_factor`` of the *least* marking of its role peers that pause as much is pausing with
shallow queues: its XOFF sits near ``Kmin``, provided it marks on no standing queue itself
(below ``min_ecn``) and none of its egress ports is held nearly all the time (``held_share``: a
storm or deadlock downstream stalls whatever sits behind it, and queues that do not send mark
nothing). This holds while other faults congest the fabric, since the peers that pass on that
congestion set the reference.

**bad** = either signature; **good** = not pausing, or pausing like its peers with the ECN they
show; fires after ``fire_after`` (2) samples, clears after ``clear_after`` (3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.rule import DeviceRule, DeviceVerdict
from detectors.signals import (
    F64,
    At,
    ecn_fraction,
    lossless_tx_util,
    pause_share,
    per_port,
    tx_util,
)
from pipeline.kinds import PAUSE_WITHOUT_LOAD
from pipeline.topology.model import Topology


class PauseWithoutLoadOptions(DetectorOptions):
    fire_after: int = Field(2, ge=1)
    min_share: float = Field(0.001, gt=0, le=1,
                             description="share of time pausing a neighbour: 1 ms per second")
    frame_overstatement: float = Field(50.0, ge=1,
                                       description="frame bound over the true share, short "
                                                   "XOFF/XON episodes")
    peer_factor: float = Field(5.0, gt=1)
    headroom_ratio: float = Field(1.25, ge=1)
    burst_load: float = Field(0.8, gt=0, lt=1,
                              description="egress load where healthy bursts pause min_share")
    max_util: float = Field(0.95, gt=0, le=1)
    min_ecn: float = Field(0.01, gt=0, le=1, description="a standing queue: real congestion")
    reason_share: float = Field(0.01, gt=0, le=1,
                                description="an egress paused this much passes congestion on")
    ecn_pause: float = Field(0.05, gt=0, le=1, description="pausing enough to expect ECN")
    min_drain: float = Field(0.01, ge=0, le=1, description="a queue that sends can mark")
    held_share: float = Field(0.9, gt=0, le=1,
                              description="an egress paused this much is stalled, not slowed")


@dataclass
class _Summary:
    pause: float  # the most the switch paused a neighbour (share of time, estimated)
    spread: float  # the mean over its ports of the same: how widely it pauses
    paused: float  # the most one of its egress ports was paused by a neighbour
    hot: float  # its busiest egress utilisation
    ecn: float  # its highest ECN marking share on queues that send (NaN: not reported)
    pausing_ports: tuple[str, ...]
    timed: bool  # every port's pausing measured by a pause timer (not a frame bound)

    #: the numbers a summary is told by (on the bus: ``timed`` as 1.0 or 0.0, NaN as None)
    NUMBERS = ("pause", "spread", "paused", "hot", "ecn", "timed")

    def numbers(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name in self.NUMBERS:
            v = float(getattr(self, name))
            out[name] = None if math.isnan(v) else v
        return out

    @classmethod
    def from_numbers(cls, values: Mapping[str, float | None],
                     pausing_ports: tuple[str, ...]) -> _Summary:
        """The summary :meth:`numbers` told; a number not told is NaN (``timed``: false)."""
        def number(name: str) -> float:
            v = values.get(name)
            return math.nan if v is None else float(v)

        return cls(pause=number("pause"), spread=number("spread"), paused=number("paused"),
                   hot=number("hot"), ecn=number("ecn"), pausing_ports=pausing_ports,
                   timed=bool(values.get("timed")))


class _Role:
    """The latest summaries of the switches of one role, one row per switch: a switch is judged
    against its peers' rows in columns, not by walking them (a fabric has hundreds per role)."""

    FIELDS = ("pause", "spread", "paused", "hot", "ecn")

    def __init__(self) -> None:
        self.n = 0
        self.values = np.zeros((len(self.FIELDS), 0), np.float64)
        self.filled = np.zeros(0, bool)

    def add(self) -> int:
        if self.n == self.filled.shape[0]:
            extra = max(self.n, 16)
            self.values = np.hstack([self.values, np.zeros((len(self.FIELDS), extra))])
            self.filled = np.concatenate([self.filled, np.zeros(extra, bool)])
        self.n += 1
        return self.n - 1

    def set(self, row: int, s: _Summary) -> None:
        self.values[:, row] = (s.pause, s.spread, s.paused, s.hot, s.ecn)
        self.filled[row] = True

    def column(self, name: str) -> NDArray[np.float64]:
        out: NDArray[np.float64] = self.values[self.FIELDS.index(name), :self.n]
        return out

    def others(self, row: int) -> NDArray[np.bool_]:
        """The rows of the other switches of the role that have a summary."""
        out = self.filled[:self.n].copy()
        out[row] = False
        return out


class PauseWithoutLoad(DeviceRule[PauseWithoutLoadOptions]):
    name = PAUSE_WITHOUT_LOAD
    Options = PauseWithoutLoadOptions
    driver = "pfc_tx_frames"
    symptom = PAUSE_WITHOUT_LOAD

    def __init__(self, instance: str, options: PauseWithoutLoadOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        #: the latest summary of every switch judged so far, in one table per role
        self.roles: dict[str, _Role] = {}
        self._role_of: dict[int, tuple[_Role, int]] = {}

    def _summary(self, frame: Frame, at: At) -> _Summary:
        o = self.opts
        per_port, paused, util, ecn, timed = _port_signals(frame, at, o.min_drain,
                                                           o.frame_overstatement)
        pausing = per_port >= o.min_share
        return _Summary(float(per_port.max(initial=0.0)),
                        float(per_port.mean()) if per_port.size else 0.0,
                        float(paused.max(initial=0.0)), float(util.max(initial=0.0)),
                        float(np.fmax.reduce(ecn)) if ecn.size else float("nan"),
                        tuple(frame.ports.label(int(p)) for p in at.pids[pausing]),
                        bool(timed.all()))

    def _place(self, frame: Frame, did: int) -> tuple[_Role, int]:
        """The role table of a switch, and its row in it (the role is looked up once)."""
        placed = self._role_of.get(did)
        if placed is None:
            role = _role(frame.ports.names.devices[did], self.topology)
            table = self.roles.setdefault(role, _Role())
            placed = self._role_of[did] = (table, table.add())
        return placed

    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        o = self.opts
        me = self._summary(frame, at)
        table, row = self._place(frame, did)
        table.set(row, me)
        peers = table.others(row)
        evidence = {"pause_share": me.pause, "mean_pause_share": me.spread, "max_util": me.hot,
                    "max_ecn": me.ecn, "paused_share": me.paused}
        pausing = me.pause >= o.min_share
        has_peers = bool(peers.any())
        if not has_peers or not pausing:
            return DeviceVerdict(False, has_peers and not pausing, evidence, me.pausing_ports)
        unlike, like = self._unlike(me, table, peers, evidence)
        reason = me.paused >= o.reason_share or me.ecn >= o.min_ecn or me.hot >= o.max_util
        shallow, deep = self._before_ecn(me, table, peers, evidence)
        bad = (unlike and not reason) or shallow
        good = (like or reason) and not shallow and deep
        strength = me.pause / max(o.min_share * o.peer_factor, 1e-9)
        evidence["strength"] = min(1.0, max(strength, 1.0 if shallow else 0.0))
        evidence["pfc_before_ecn"] = 1.0 if shallow else 0.0
        return DeviceVerdict(bad, good and not bad, evidence, me.pausing_ports, known=True)

    def _unlike(self, me: _Summary, table: _Role, peers: NDArray[np.bool_],
                evidence: dict[str, float]) -> tuple[bool, bool]:
        """Pausing ``peer_factor`` times more than peers at comparable load (and, second, clearly
        like them); neither when no peer runs as hot."""
        o = self.opts
        room = max(1.0 - me.hot, 0.0)
        hot = table.column("hot")
        running = peers & (hot < o.max_util)
        comparable = running & (1.0 - hot <= o.headroom_ratio * room + 1e-9)
        if not comparable.any():
            return self._hottest(me, hot[running], evidence), False
        peer_pause = float(np.median(table.column("spread")[comparable]))
        evidence.update(peer_mean_pause_share=peer_pause,
                        peer_max_util=float(np.median(hot[comparable])))
        # peers that hardly pause set no scale: healthy bursts pause a little near saturation,
        # and more the closer it is (the burst queue grows as rho / (1 - rho))
        allowance = evidence["burst_allowance"] = self._allowance(me.hot)
        ref = max(o.peer_factor * peer_pause, allowance)
        return me.spread >= ref, me.spread < ref / 2

    def _hottest(self, me: _Summary, cooler: NDArray[np.float64],
                 evidence: dict[str, float]) -> bool:
        """Unlike its peers when none runs as hot as it does (the others all have more headroom:
        a switch that carries more of the load, such as the leaf of a busier job): healthy
        bursts at its own load set the scale, with the margin a peer's pausing gets
        (``peer_factor`` times the burst allowance, and never below ``peer_factor`` times
        ``min_share``). Only where the switch times its pauses: the burst model speaks of the
        time paused, which a frame bound overstates (with peers, theirs is overstated alike). Not
        judged when no peer runs unsaturated (their load is congestion's)."""
        o = self.opts
        if not me.timed or not cooler.size or float(cooler.max()) > me.hot:
            return False
        allowance = evidence["burst_allowance"] = self._allowance(me.hot)
        evidence["peer_max_util"] = float(cooler.max())
        return me.spread >= o.peer_factor * max(allowance, o.min_share)

    def _allowance(self, rho: float) -> float:
        """The pause share healthy bursts may cause at egress load ``rho``: the share of time a
        burst queue stands above XOFF, ``rho * exp(-(1 - rho) * XOFF / b)`` for bursts of mean
        ``b`` (the exponential tail of a queue at load ``rho``), with ``XOFF / b`` such that it
        is ``min_share`` at ``burst_load``."""
        o = self.opts
        depth = math.log(o.burst_load / o.min_share) / (1.0 - o.burst_load)
        r = min(max(rho, 0.0), 1.0)
        return r * math.exp(-(1.0 - r) * depth)

    def _before_ecn(self, me: _Summary, table: _Role, peers: NDArray[np.bool_],
                    evidence: dict[str, float]) -> tuple[bool, bool]:
        """Pausing hard with ECN far below what the peers that pause as hard show (and,
        second, whether the ECN is consistent with its pausing or cannot be judged)."""
        o = self.opts
        if me.pause < o.ecn_pause or not np.isfinite(me.ecn):
            return False, True
        ecn = table.column("ecn")
        marking = ecn[peers & (table.column("pause") >= o.ecn_pause) & np.isfinite(ecn)]
        if not marking.size:
            return False, True
        least = float(marking.min())
        evidence["peer_least_ecn"] = least
        # an egress held back nearly all the time (a storm or a deadlock downstream) stalls the
        # traffic behind it whatever the thresholds; and a switch that marks ECN on a standing
        # queue has let its queues grow past Kmin before pausing
        shallow = (me.ecn * o.peer_factor < least and least >= o.min_ecn
                   and me.paused < o.held_share and me.ecn < o.min_ecn)
        return shallow, me.ecn * o.peer_factor / 2 >= least


@per_port
def _port_signals(frame: Frame, at: At, min_drain: float, overstatement: float
                  ) -> tuple[F64, F64, F64, F64, NDArray[np.bool_]]:
    """Per port (once over every switch judged, :func:`~detectors.signals.per_port`): the most it
    paused a neighbour (share of time, frame bounds divided by ``overstatement``), the most it
    was paused, its egress utilisation, and its highest ECN marking on queues that send at least
    ``min_drain`` (NaN: not reported), and whether its pausing is timed (not a frame bound)."""
    tx_share, measured = pause_share(frame, at, "tx")
    rx_share, _ = pause_share(frame, at, "rx")
    util = np.nan_to_num(tx_util(frame, at), nan=0.0)
    ecn = ecn_fraction(frame, at)
    sends = lossless_tx_util(frame, at) >= min_drain
    ecn = np.where(sends & np.isfinite(ecn), ecn, np.nan)
    scaled = np.where(measured > 0, tx_share, tx_share / overstatement)
    pausing = np.max(np.where(np.isfinite(scaled), scaled, 0.0), axis=1)
    paused = np.max(np.where(np.isfinite(rx_share), rx_share, 0.0), axis=1)
    timed = measured.max(axis=1, initial=0.0) > 0
    return pausing, paused, util, np.fmax.reduce(ecn, axis=1), timed


def _role(device: str, topology: Topology | None) -> str:
    if topology is not None:
        if device in topology.spines:
            return "spine"
        if device in topology.leaves:
            return "leaf"
    return device.rstrip("0123456789")
