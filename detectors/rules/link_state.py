"""Link state: ports that go down and stay down, and ports that bounce (flaps).

Three views of one physical fact, whichever a device gives:

* ``if_oper_status`` (IF-MIB values; gNMI sends it on change with the change's time, SNMP polls
  it): a port seen down while administratively up starts a *down episode*;
* ``if_carrier_transitions`` (OpenConfig / SONiC): every transition counts, including a down-up
  bounce shorter than one sample interval that no status poll could catch, and an odd number of
  transitions no status report accounts for starts a down episode (a lost on-change update);
* ``if_last_change`` (SNMP ifLastChange): it moves when the status changed, even if both polls saw
  the port up.

A **bounce** is a down episode that ends in ``up`` within ``bounce_max_s`` (a link that is repaired
after a long outage did not flap), or transitions/last-change movement the status polls did not
see. One bounce is a complete down-up cycle — two transitions, two observations — so
``carrier_flap`` fires on the first; it clears after ``stable_s`` without a bounce. ``port_down``
fires once a down episode has been confirmed by ``fire_after`` samples of the port (distinct event
times, so a single glitchy status report is not an outage) and clears when the port is up. A port
taken down administratively (a drain) is neither down nor flapping.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import Detector, DetectorOptions, Symptoms, grown
from detectors.features import Frame, col
from detectors.ports import PortIndex, PortKind
from pipeline.kinds import CARRIER_FLAP, PORT_DOWN
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology

UP = 1.0
DOWN_STATES = (2.0, 7.0)  # down, lowerLayerDown
ADMIN_DOWN = 2.0


class LinkStateOptions(DetectorOptions):
    bounce_max_s: float = Field(30.0, gt=0, description="longest down episode that is a bounce")
    stable_s: float = Field(60.0, gt=0, description="bounce-free time before a flap clears")


class _Port:
    __slots__ = ("bounces", "carrier_ts", "down_evals", "down_since", "eval_ts", "oper_ts",
                 "seen_changes", "was_up")

    def __init__(self) -> None:
        self.down_since = -1
        self.oper_ts = -1
        self.carrier_ts = -1
        self.eval_ts = -1
        self.down_evals = 0
        self.seen_changes = 0  # status transitions seen since the last carrier sample
        self.was_up = True
        self.bounces: deque[int] = deque()


class LinkState(Detector):
    """Raises ``port_down`` and ``carrier_flap``: two symptoms of one link state."""

    name = "link_state"
    Options = LinkStateOptions

    def __init__(self, instance: str, options: LinkStateOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.state: dict[int, _Port] = {}
        self.symptoms = Symptoms(self.name)
        self._oper, self._admin = col("if_oper_status"), col("if_admin_status")
        self._carrier, self._last = col("if_carrier_transitions"), col("if_last_change")
        self.prev_oper = np.zeros(0)
        self.prev_last = np.zeros(0)
        self.open = np.zeros(0, bool)  # a down episode is open

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        t = frame.touched
        pids = t[frame.ports.kind[t] != PortKind.DEVICE]
        pids, last_moved = self._interesting(frame, pids)
        for pid, moved in zip(pids.tolist(), last_moved.tolist(), strict=True):
            self._judge(frame, pid, moved)
        self._expire(now_ns)
        return self.symptoms.alerts()

    def _interesting(self, frame: Frame, pids: NDArray[np.int64],
                     ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Ports whose status changed, whose carrier or last-change moved, or with a down episode
        open (the rest of a quiet fabric costs one vectorised comparison); and which of them saw
        ifLastChange move."""
        tab = frame.table
        n = tab.n_ports
        self.prev_oper = grown(self.prev_oper, n, UP)
        self.prev_last = grown(self.prev_last, n, np.nan)
        self.open = grown(self.open, n, False)
        oper = tab.value[pids, self._oper]
        has_oper = tab.ts[pids, self._oper] >= 0
        last = tab.value[pids, self._last]
        has_last = tab.ts[pids, self._last] >= 0
        moved = tab.value[pids, self._carrier]
        last_moved = has_last & np.isfinite(self.prev_last[pids]) & (last != self.prev_last[pids])
        changed = (has_oper & (oper != self.prev_oper[pids])) | \
            (np.isfinite(moved) & (moved > 0)) | last_moved
        self.prev_oper[pids] = np.where(has_oper, oper, self.prev_oper[pids])
        self.prev_last[pids] = np.where(has_last, last, self.prev_last[pids])
        keep = changed | self.open[pids]
        return pids[keep], last_moved[keep]

    def _judge(self, frame: Frame, pid: int, last_moved: bool) -> None:
        tab = frame.table
        st = self.state.setdefault(pid, _Port())
        now = int(tab.port_ts[pid])
        if now <= st.eval_ts:
            return
        admin_down = bool(tab.ts[pid, self._admin] >= 0 and
                          tab.value[pid, self._admin] == ADMIN_DOWN)
        oper_t = int(tab.ts[pid, self._oper])
        oper = tab.value[pid, self._oper]
        if oper_t > st.oper_ts:
            st.oper_ts = oper_t
            if (oper == UP) != st.was_up:
                st.seen_changes += 1  # a transition the status report accounts for
            if oper in DOWN_STATES and not admin_down:
                if st.down_since < 0:
                    st.down_since = oper_t
                    st.down_evals = 0
            elif oper == UP and st.down_since >= 0:
                if (oper_t - st.down_since) / 1e9 <= self.opts.bounce_max_s:
                    st.bounces.append(oper_t)
                st.down_since = -1
            elif admin_down:
                st.down_since = -1
        up_now = oper == UP if oper_t >= 0 else True
        carrier_t = int(tab.ts[pid, self._carrier])
        if carrier_t > st.carrier_ts:
            st.carrier_ts = carrier_t
            rate, dt = tab.value[pid, self._carrier], tab.dt[pid, self._carrier]
            moved = round(rate * dt) if np.isfinite(rate) and np.isfinite(dt) else 0
            unseen = moved - st.seen_changes
            if unseen >= 2 and up_now and not admin_down:
                st.bounces.append(carrier_t)  # a bounce inside one interval, unseen by status
            elif unseen > 0 and unseen % 2 == 1 and up_now and st.down_since < 0 and not admin_down:
                st.down_since = carrier_t  # went down; the status report has not arrived (yet)
                st.down_evals = 0
                up_now = False
            st.seen_changes = 0
        if last_moved and up_now and st.was_up and st.down_since < 0 and not admin_down \
                and tab.ts[pid, self._carrier] < 0:
            st.bounces.append(int(tab.ts[pid, self._last]))  # SNMP: changed between two polls
        st.was_up = bool(up_now)
        if st.down_since >= 0 and now >= st.down_since:
            st.down_evals += 1
        self.open[pid] = st.down_since >= 0
        st.eval_ts = now
        self._symptoms(frame.ports, pid, st, now)

    def _symptoms(self, ports: PortIndex, pid: int, st: _Port, now: int) -> None:
        label = ports.label(pid)
        labels = {"device": ports.device(pid), "port": ports.names.port_name[pid]}
        down_key, flap_key = 2 * pid, 2 * pid + 1
        if st.down_since >= 0 and st.down_evals >= self.opts.fire_after:
            ev = {"down_s": (now - st.down_since) / 1e9}
            if down_key not in self.symptoms.active:
                self.symptoms.fire(down_key, name=PORT_DOWN, entity=label, ports=(label,),
                                   labels=labels, evidence=ev, onset_ns=st.down_since, ts_ns=now,
                                   severity=Severity.CRITICAL)
            else:
                # still down at this sample: the evidence is as fresh as the port's last report
                self.symptoms.update(down_key, ev, now)
        elif st.down_since < 0:
            self.symptoms.clear(down_key)
        if st.bounces:
            ev = {"bounces": float(len(st.bounces))}
            if flap_key not in self.symptoms.active:
                self.symptoms.fire(flap_key, name=CARRIER_FLAP, entity=label, ports=(label,),
                                   labels=labels, evidence=ev, onset_ns=st.bounces[0], ts_ns=now,
                                   severity=Severity.CRITICAL)
            else:
                self.symptoms.update(flap_key, ev, now)

    def _expire(self, now_ns: int) -> None:
        horizon = now_ns - int(self.opts.stable_s * 1e9)
        for key in [k for k in self.symptoms.active if k % 2 == 1]:
            st = self.state[key // 2]
            while st.bounces and st.bounces[0] < horizon:
                st.bounces.popleft()
            if not st.bounces:
                self.symptoms.clear(key)
