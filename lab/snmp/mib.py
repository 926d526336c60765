"""The MIB a simulated switch serves over SNMP: every object, its OID, type and live value.

Objects (numeric OIDs; see ``docs/telemetry-dialects.md``, profile ``snmp``):

* SNMPv2-MIB system group: sysDescr, sysObjectID, sysUpTime (simulated uptime), sysContact,
  sysName, sysLocation; IF-MIB ifNumber;
* IF-MIB ``ifTable`` (Counter32 columns wrap at 2**32) and ``ifXTable`` (HC Counter64 columns);
* HOST-RESOURCES-MIB hrSystemDate: the simulated wall clock (DateAndTime, UTC);
* EtherLike-MIB ``dot3StatsTable`` (Counter32) and ``dot3HCStatsTable`` (Counter64);
* IEEE8021-PFC-MIB ``ieee8021PfcIfTable`` (per interface, all priorities summed, Counter32);
* CISCO-PFC-EXT-MIB ``cpfcIfTable``, ``cpfcIfPriorityTable`` and ``cpfcIfPriorityWaitTable``
  (per interface and priority 0..7, Counter64, waits in microseconds);
* CISCO-SWITCH-QOS-MIB ``csqIfQosGroupStatsTable`` (egress, queue+1, stat types 1 ucast sent
  packets, 2 ucast sent bytes, 5 ucast dropped packets; Counter64);
* LLDP-MIB, given the fabric's LLDP state: :mod:`lab.snmp.lldp`.

Table index is the ifIndex, k for ``Ethernet<k>``. Values are computed from the latest snapshot
when a request arrives; one request reads one snapshot, so a GETBULK is self-consistent.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pysnmp.proto import rfc1902

from lab import counters as cf
from lab.counters import Layout
from lab.snmp.lldp import LLDP_MIB, LldpMib
from lab.wiring import N_PRIO, Wiring

Oid = tuple[int, ...]
Snap = NDArray[np.float64]

SYSTEM = (1, 3, 6, 1, 2, 1, 1)
IF_NUMBER = (1, 3, 6, 1, 2, 1, 2, 1, 0)
IF_TABLE = (1, 3, 6, 1, 2, 1, 2, 2, 1)
IFX_TABLE = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1)
HR_SYSTEM_DATE = (1, 3, 6, 1, 2, 1, 25, 1, 2, 0)
DOT3_STATS = (1, 3, 6, 1, 2, 1, 10, 7, 2, 1)
DOT3_HC_STATS = (1, 3, 6, 1, 2, 1, 10, 7, 11, 1)
IEEE_PFC_IF = (1, 3, 111, 2, 802, 1, 1, 21, 1, 1, 1)
CPFC_IF = (1, 3, 6, 1, 4, 1, 9, 9, 813, 1, 1, 1)
CPFC_PRIO = (1, 3, 6, 1, 4, 1, 9, 9, 813, 1, 2, 1)
CPFC_WAIT = (1, 3, 6, 1, 4, 1, 9, 9, 813, 1, 4, 1)
CSQ_STATS = (1, 3, 6, 1, 4, 1, 9, 9, 580, 1, 5, 5, 1, 4)
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 8072, 3, 2, 10)

_C32 = 2**32


@dataclass(frozen=True)
class Row:
    """How to produce one object's value from a snapshot."""

    make: Callable[[Snap], Any]


class SwitchMib:
    def __init__(self, switch: str, wiring: Wiring, layout: Layout,
                 epoch_ns: Callable[[], int], lldp: LldpMib | None = None) -> None:
        self.switch = switch
        self.lldp = lldp
        self.layout = layout
        self._epoch_ns = epoch_ns
        self.device = wiring.device_index(switch)
        rows: dict[Oid, Row] = {}
        self._system(rows, switch)
        ports = wiring.switch_ports[self.device].tolist()
        n_if = len(ports)
        rows[IF_NUMBER] = Row(lambda s: rfc1902.Integer32(n_if))
        rows[HR_SYSTEM_DATE] = Row(self._date)
        for p in ports:
            self._interface(rows, wiring, p)
        self.oids: list[Oid] = sorted(rows)
        self.rows = [rows[o] for o in self.oids]

    # ------------------------------------------------------------------ lookup

    def get(self, oid: Oid, snap: Snap) -> Any | None:
        if self.lldp is not None and oid[:len(LLDP_MIB)] == LLDP_MIB:
            return self.lldp.get(oid, snap)
        i = bisect.bisect_left(self.oids, oid)
        if i < len(self.oids) and self.oids[i] == oid:
            return self.rows[i].make(snap)
        return None

    def next(self, oid: Oid, snap: Snap) -> tuple[Oid, Any] | None:
        # the LLDP-MIB (1.0.8802...) sorts before every other object served here
        if self.lldp is not None and oid < (*LLDP_MIB, 0xFFFFFFFF):
            found = self.lldp.next(oid, snap)
            if found is not None:
                return found
        i = bisect.bisect_right(self.oids, oid)
        if i >= len(self.oids):
            return None
        return self.oids[i], self.rows[i].make(snap)

    # ------------------------------------------------------------------ time

    def uptime_s(self, snap: Snap) -> float:
        return float(snap[cf.H_TIME]) - float(snap[self.layout.dev_index(self.device, cf.D_BOOT_S)])

    def _ticks(self, seconds: float) -> rfc1902.TimeTicks:
        return rfc1902.TimeTicks(int(max(seconds, 0.0) * 100) % _C32)

    def _date(self, snap: Snap) -> rfc1902.OctetString:
        ns = self._epoch_ns() + round(float(snap[cf.H_TIME]) * 1e9)
        t = dt.datetime.fromtimestamp(ns / 1e9, dt.UTC)
        octets = bytes([t.year >> 8, t.year & 0xFF, t.month, t.day, t.hour, t.minute, t.second,
                        t.microsecond // 100000, ord("+"), 0, 0])
        return rfc1902.OctetString(octets)

    # ------------------------------------------------------------------ objects

    def _system(self, rows: dict[Oid, Row], switch: str) -> None:
        descr = f"rocewatch lab simulated RoCE switch {switch}"
        rows[(*SYSTEM, 1, 0)] = Row(lambda s: rfc1902.OctetString(descr))
        rows[(*SYSTEM, 2, 0)] = Row(lambda s: rfc1902.ObjectIdentifier(SYS_OBJECT_ID))
        rows[(*SYSTEM, 3, 0)] = Row(lambda s: self._ticks(self.uptime_s(s)))
        rows[(*SYSTEM, 4, 0)] = Row(lambda s: rfc1902.OctetString("lab@rocewatch"))
        rows[(*SYSTEM, 5, 0)] = Row(lambda s: rfc1902.OctetString(switch))
        rows[(*SYSTEM, 6, 0)] = Row(lambda s: rfc1902.OctetString("rocewatch lab"))

    def _interface(self, rows: dict[Oid, Row], w: Wiring, p: int) -> None:
        lay = self.layout
        k = int(w.port_number[p])
        name = w.port_name[p]
        alias = w.link_ids[int(w.port_link[p])]

        def fld(f: int) -> int:
            return lay.port_index(p, f)

        def c32(f: int) -> Row:
            i = fld(f)
            return Row(lambda s: rfc1902.Counter32(int(s[i]) % _C32))

        def c64(i: int) -> Row:
            return Row(lambda s: rfc1902.Counter64(int(s[i])))

        def status(f: int) -> Row:
            i = fld(f)
            return Row(lambda s: rfc1902.Integer32(round(float(s[i]))))

        def zero32() -> Row:
            return Row(lambda s: rfc1902.Counter32(0))

        def zero64() -> Row:
            return Row(lambda s: rfc1902.Counter64(0))

        last = fld(cf.P_LAST_CHANGE)
        boot = lay.dev_index(self.device, cf.D_BOOT_S)
        speed = float(w.bps[p])
        mac = bytes([0x02, 0x00, self.device & 0xFF, 0x00, (k >> 8) & 0xFF, k & 0xFF])
        it = IF_TABLE
        rows[(*it, 1, k)] = Row(lambda s: rfc1902.Integer32(k))
        rows[(*it, 2, k)] = Row(lambda s: rfc1902.OctetString(name))
        rows[(*it, 3, k)] = Row(lambda s: rfc1902.Integer32(6))            # ethernetCsmacd
        rows[(*it, 4, k)] = Row(lambda s: rfc1902.Integer32(9100))
        rows[(*it, 5, k)] = Row(lambda s: rfc1902.Gauge32(min(int(speed), _C32 - 1)))
        rows[(*it, 6, k)] = Row(lambda s: rfc1902.OctetString(mac))
        rows[(*it, 7, k)] = status(cf.P_ADMIN)
        rows[(*it, 8, k)] = status(cf.P_OPER)
        rows[(*it, 9, k)] = Row(lambda s: self._ticks(float(s[last]) - float(s[boot])))
        rows[(*it, 10, k)] = c32(cf.P_IN_OCTETS)
        rows[(*it, 11, k)] = c32(cf.P_IN_PKTS)
        rows[(*it, 13, k)] = c32(cf.P_IN_DISCARDS)
        rows[(*it, 14, k)] = c32(cf.P_IN_ERRORS)
        rows[(*it, 15, k)] = zero32()
        rows[(*it, 16, k)] = c32(cf.P_OUT_OCTETS)
        rows[(*it, 17, k)] = c32(cf.P_OUT_PKTS)
        rows[(*it, 19, k)] = c32(cf.P_OUT_DISCARDS)
        rows[(*it, 20, k)] = c32(cf.P_OUT_ERRORS)
        xt = IFX_TABLE
        rows[(*xt, 1, k)] = Row(lambda s: rfc1902.OctetString(name))
        for col in (2, 3, 4, 5):
            rows[(*xt, col, k)] = zero32()
        rows[(*xt, 6, k)] = c64(fld(cf.P_IN_OCTETS))
        rows[(*xt, 7, k)] = c64(fld(cf.P_IN_PKTS))
        rows[(*xt, 8, k)] = zero64()
        rows[(*xt, 9, k)] = zero64()
        rows[(*xt, 10, k)] = c64(fld(cf.P_OUT_OCTETS))
        rows[(*xt, 11, k)] = c64(fld(cf.P_OUT_PKTS))
        rows[(*xt, 12, k)] = zero64()
        rows[(*xt, 13, k)] = zero64()
        rows[(*xt, 14, k)] = Row(lambda s: rfc1902.Integer32(1))
        rows[(*xt, 15, k)] = Row(lambda s: rfc1902.Gauge32(int(speed / 1e6)))
        rows[(*xt, 16, k)] = Row(lambda s: rfc1902.Integer32(2))
        rows[(*xt, 17, k)] = Row(lambda s: rfc1902.Integer32(1))
        rows[(*xt, 18, k)] = Row(lambda s: rfc1902.OctetString(alias))
        rows[(*xt, 19, k)] = Row(lambda s: rfc1902.TimeTicks(0))
        ds = DOT3_STATS
        rows[(*ds, 1, k)] = Row(lambda s: rfc1902.Integer32(k))
        rows[(*ds, 2, k)] = zero32()
        rows[(*ds, 3, k)] = c32(cf.P_IN_FCS)
        rows[(*ds, 18, k)] = c32(cf.P_IN_SYMBOL)
        hc = DOT3_HC_STATS
        rows[(*hc, 1, k)] = zero64()
        rows[(*hc, 2, k)] = c64(fld(cf.P_IN_FCS))
        rows[(*hc, 6, k)] = c64(fld(cf.P_IN_SYMBOL))
        tx = [lay.prio_index(p, q, cf.Q_PFC_TX) for q in range(N_PRIO)]
        rx = [lay.prio_index(p, q, cf.Q_PFC_RX) for q in range(N_PRIO)]
        rows[(*IEEE_PFC_IF, 1, k)] = Row(lambda s: rfc1902.Unsigned32(0))
        rows[(*IEEE_PFC_IF, 2, k)] = Row(lambda s: rfc1902.Counter32(_total(s, tx) % _C32))
        rows[(*IEEE_PFC_IF, 3, k)] = Row(lambda s: rfc1902.Counter32(_total(s, rx) % _C32))
        rows[(*CPFC_IF, 1, k)] = Row(lambda s: rfc1902.Counter64(_total(s, tx)))
        rows[(*CPFC_IF, 2, k)] = Row(lambda s: rfc1902.Counter64(_total(s, rx)))
        for q in range(N_PRIO):
            rows[(*CPFC_PRIO, 2, k, q)] = c64(lay.prio_index(p, q, cf.Q_PFC_TX))
            rows[(*CPFC_PRIO, 3, k, q)] = c64(lay.prio_index(p, q, cf.Q_PFC_RX))
            rows[(*CPFC_WAIT, 2, k, q)] = c64(lay.prio_index(p, q, cf.Q_PFC_RX_US))
            rows[(*CPFC_WAIT, 3, k, q)] = c64(lay.prio_index(p, q, cf.Q_PFC_TX_US))
            for stat, f in ((1, cf.Q_TX_PKTS), (2, cf.Q_TX_OCTETS), (5, cf.Q_DROPPED)):
                rows[(*CSQ_STATS, k, 2, q + 1, stat)] = c64(lay.prio_index(p, q, f))


def _total(snap: Snap, idx: list[int]) -> int:
    return int(sum(int(snap[i]) for i in idx))
