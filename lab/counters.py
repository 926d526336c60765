"""The device-visible state of the fabric: counter and gauge fields, and the flat snapshot layout.

The simulation keeps every counter as a float64 accumulator (fractional events accumulate exactly
up to 2**53, weeks of 400G traffic) and publishes a *snapshot* at every statistics tick: one flat
float64 vector that the agents read without knowing the physics. Agents serve ``floor`` of a
counter as an unsigned 64-bit integer, so served counters only grow, except across a simulated
counter reset (:meth:`CounterState.reset_device`), which also restarts the device's uptime.

Layout of a snapshot vector::

    [HEADER (N_HEADER)] [port fields (ports x N_PORT_FIELDS)]
    [priority/queue fields (ports x 8 x N_PRIO_FIELDS)] [device fields (devices x N_DEVICE_FIELDS)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lab.wiring import N_PRIO, Wiring

# header
H_TIME = 0        # simulated seconds of this snapshot
H_TICK = 1        # statistics tick number
H_APPLIED = 2     # sequence number of the last control command the simulation applied
H_ROUTES = 3      # routing version (bumps when paths change)
N_HEADER = 8

# per port
PORT_FIELDS = (
    "in_octets", "out_octets", "in_pkts", "out_pkts", "in_errors", "out_errors",
    "in_discards", "out_discards", "in_fcs_errors", "in_symbol_errors", "fec_corrected",
    "fec_uncorrectable", "carrier_transitions", "oper_status", "admin_status", "last_change_s",
    "speed_bps",
)
P_IN_OCTETS, P_OUT_OCTETS, P_IN_PKTS, P_OUT_PKTS, P_IN_ERRORS, P_OUT_ERRORS = range(6)
P_IN_DISCARDS, P_OUT_DISCARDS, P_IN_FCS, P_IN_SYMBOL, P_FEC_CORR, P_FEC_UNCORR = range(6, 12)
P_CARRIER, P_OPER, P_ADMIN, P_LAST_CHANGE, P_SPEED = range(12, 17)
N_PORT_FIELDS = len(PORT_FIELDS)

# per port and priority (PFC) or queue (queues are indexed by the priority they carry)
PRIO_FIELDS = (
    "pfc_rx_frames", "pfc_tx_frames", "pfc_rx_us", "pfc_tx_us", "q_tx_pkts", "q_tx_octets",
    "q_dropped_pkts", "q_ecn_marked", "q_occupancy", "q_watermark",
)
Q_PFC_RX, Q_PFC_TX, Q_PFC_RX_US, Q_PFC_TX_US, Q_TX_PKTS, Q_TX_OCTETS = range(6)
Q_DROPPED, Q_ECN, Q_OCCUPANCY, Q_WATERMARK = range(6, 10)
N_PRIO_FIELDS = len(PRIO_FIELDS)

# per device (switches, then hosts): state, and the lossless buffer configuration it runs with
D_BOOT_S = 0      # simulated time of the device's last (re)boot: uptime = now - boot
D_XOFF = 1        # bytes in a lossless ingress PG at which the device sends XOFF
D_XON = 2         # ... and below which it sends XON again
D_HEADROOM = 3    # headroom reserved per lossless PG for what is in flight after XOFF
D_ECN_KMIN = 4    # RED/ECN marking starts (bytes of egress queue)
D_ECN_KMAX = 5    # ... and marks everything from here
D_ECN_PMAX = 6    # marking probability at Kmax, per cent
N_DEVICE_FIELDS = 8

OPER_UP, OPER_DOWN = 1.0, 2.0


ALL_PRIOS = tuple(range(N_PRIO))


@dataclass(frozen=True)
class Layout:
    """Offsets of each section in a snapshot vector of a given fabric.

    ``prios`` are the priorities whose per-priority fields the vector carries: all eight in the
    simulation's own counters, only the active ones (those that can ever carry traffic or be
    paused) in the published snapshot, where every other priority reads as the one zero cell at
    the end (``zero_index``). On the 24,576-GPU reference fabric that is 23 MB a snapshot instead
    of 84."""

    n_ports: int
    n_devices: int
    prios: tuple[int, ...] = ALL_PRIOS

    @property
    def n_slots(self) -> int:
        return len(self.prios)

    @property
    def port_off(self) -> int:
        return N_HEADER

    @property
    def prio_off(self) -> int:
        return self.port_off + self.n_ports * N_PORT_FIELDS

    @property
    def dev_off(self) -> int:
        return self.prio_off + self.n_ports * self.n_slots * N_PRIO_FIELDS

    @property
    def zero_index(self) -> int:
        """A cell that is always 0: what an inactive priority's fields read."""
        return self.dev_off + self.n_devices * N_DEVICE_FIELDS

    @property
    def size(self) -> int:
        return self.zero_index + 1

    def port_index(self, port: int, fld: int) -> int:
        return self.port_off + port * N_PORT_FIELDS + fld

    def prio_index(self, port: int, prio: int, fld: int) -> int:
        if prio not in self.prios:
            return self.zero_index
        slot = self.prios.index(prio)
        return self.prio_off + (port * self.n_slots + slot) * N_PRIO_FIELDS + fld

    def dev_index(self, dev: int, fld: int) -> int:
        return self.dev_off + dev * N_DEVICE_FIELDS + fld

    @classmethod
    def of(cls, wiring: Wiring, prios: tuple[int, ...] = ALL_PRIOS) -> Layout:
        return cls(wiring.n_ports, len(wiring.switches) + len(wiring.hosts), tuple(prios))


class CounterState:
    """The counters and gauges, as views into one flat vector that is published as is."""

    def __init__(self, wiring: Wiring) -> None:
        self.layout = Layout.of(wiring)
        lay = self.layout
        self.vector: NDArray[np.float64] = np.zeros(lay.size)
        self.header = self.vector[:N_HEADER]
        self.port = self.vector[lay.port_off:lay.prio_off].reshape(lay.n_ports, N_PORT_FIELDS)
        self.prio = self.vector[lay.prio_off:lay.dev_off].reshape(lay.n_ports, N_PRIO,
                                                                  N_PRIO_FIELDS)
        self.device = self.vector[lay.dev_off:lay.zero_index].reshape(lay.n_devices,
                                                                      N_DEVICE_FIELDS)
        self.port[:, P_OPER] = OPER_UP
        self.port[:, P_ADMIN] = OPER_UP
        self.port[:, P_SPEED] = wiring.bps
        self._port_device = wiring.port_device

    def published(self, lay: Layout) -> NDArray[np.float64]:
        """The snapshot in ``lay`` (the simulation's own layout, or one carrying only the
        active priorities)."""
        if lay.prios == self.layout.prios:
            return self.vector
        out = np.empty(lay.size)
        own = self.layout
        out[:own.prio_off] = self.vector[:own.prio_off]
        out[lay.prio_off:lay.dev_off] = self.prio[:, list(lay.prios), :].ravel()
        out[lay.dev_off:lay.zero_index] = self.device.ravel()
        out[lay.zero_index] = 0.0
        return out

    def reset_device(self, device: int, now_s: float) -> None:
        """A simulated reboot: the device's counters restart from zero and its uptime from now."""
        ports = np.flatnonzero(self._port_device == device)
        keep = np.asarray((P_OPER, P_ADMIN, P_LAST_CHANGE, P_SPEED))
        saved = self.port[np.ix_(ports, keep)].copy()
        self.port[ports] = 0.0
        self.port[np.ix_(ports, keep)] = saved
        self.prio[ports] = 0.0
        self.port[ports, P_LAST_CHANGE] = now_s
        self.device[device, D_BOOT_S] = now_s
