"""One SNMP target's poll: the device's clock, its interface names, and its rows as samples.

Each poll GETs ``sysUpTime`` and ``hrSystemDate`` (with the scalars its owner watches: a
change marker such as LLDP-MIB's ``lldpStatsRemTablesLastChangeTime``, read in the same request at
no extra round trip), then walks the profile's columns. A watched scalar the device does not
serve, or whose request it refuses, is dropped from later polls. SNMP carries
no per-sample timestamp, so the sample time is the device's own clock: ``hrSystemDate`` anchored
to ``sysUpTime`` (``hrSystemDate`` has decisecond resolution and may be stepped by NTP;
``sysUpTime`` ticks evenly in centiseconds). The collector's clock stamps the poll instead
(:class:`~collectors.clocks.CollectorClock`: read at the instant the poll started, nothing fed
back) when the device has no ``hrSystemDate``, or when its date disagrees with the collector's
clock by more than ``clock_tolerance_s`` (a device clock years off would have every sample
dropped by retention, or poison the fabric's time); the health says which, and why
(``clock: collector``, ``clock_note``), and the device is checked again at every poll.

``sysUpTime`` going backwards means the device restarted: the first samples after it carry
:data:`FLAG_RESET` and a ``counter_reset`` sample is emitted, so rates do not read a reboot as a
huge negative (or, for Counter32, a wrapped) delta. Counter32 values carry
:data:`FLAG_COUNTER32` so rates unwrap them at 2**32. The ifIndex → ifName map is cached and
refreshed periodically, after a reboot, and when a row names an ifIndex it does not know. A device
without ``ifName`` (no ifXTable) names its ports by ``ifDescr`` (health ``port_names``).

A poll that answers proves the session; one that fails ends it (health ``connected``). A device
that answers but none of whose rows map onto the profile is reported as ``no_mapped_data``.
"""

from __future__ import annotations

import calendar
import struct
import time
from dataclasses import dataclass

import numpy as np

from collectors.clocks import CollectorClock, clock_offset_ok, wall_ns
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import SnmpColumn, SnmpProfile
from collectors.snmp.ber import (
    COUNTER32,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    NUMERIC,
    OCTET_STRING,
    Varbind,
    oid_bytes,
    subids,
)
from collectors.snmp.client import SnmpClient, SnmpErrorStatus, SnmpTimeout
from collectors.snmp.walk import Rows, walk_columns
from pipeline.errors import DecodeError
from pipeline.metrics import IS_COUNTER, metric_id
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, SampleBatch

COUNTER_RESET = metric_id("counter_reset")
#: sysUpTime is a TimeTicks (centiseconds) that wraps at 2**32 (after 497 days)
_UPTIME_WRAP = 2**32
_CS = 10_000_000  # ns per centisecond


def parse_date_and_time(raw: bytes) -> int:
    """SNMPv2-TC DateAndTime (8 or 11 octets) → ns since the epoch (UTC)."""
    if len(raw) not in (8, 11):
        raise DecodeError(f"DateAndTime has 8 or 11 octets, not {len(raw)}")
    year, month, day, hour, minute, second, deci = struct.unpack(">HBBBBBB", raw[:8])
    try:
        seconds = calendar.timegm((year, month, day, hour, minute, min(second, 59), 0, 0, 0))
    except (ValueError, OverflowError) as exc:
        raise DecodeError(f"DateAndTime {raw.hex()} is not a date: {exc}") from exc
    if len(raw) == 11:
        sign = -1 if raw[8:9] == b"-" else 1
        seconds -= sign * (raw[9] * 3600 + raw[10] * 60)  # local time minus its offset is UTC
    return int(seconds) * 1_000_000_000 + int(deci) * 100_000_000


class SnmpClock:
    """hrSystemDate anchored to sysUpTime; detects restarts and wraps of sysUpTime."""

    #: re-anchor when the device's date and the anchored estimate drift apart by more than this
    STEP_NS = 2_000_000_000

    def __init__(self) -> None:
        self.anchor: tuple[int, int] | None = None  # (uptime in ticks, ns)
        self.last_ticks: int | None = None
        self._wraps = 0

    def update(self, uptime_cs: int, date_ns: int | None) -> tuple[int | None, bool]:
        """``(sample time or None when the device has no date, restarted)``."""
        restarted = False
        if self.last_ticks is not None and uptime_cs < self.last_ticks % _UPTIME_WRAP:
            if self.last_ticks % _UPTIME_WRAP > _UPTIME_WRAP - 360_000 and uptime_cs < 360_000:
                self._wraps += 1  # an hour before and after the wrap point: a wrap, not a reboot
            else:
                restarted = True
                self._wraps = 0
                self.anchor = None
        ticks = uptime_cs + self._wraps * _UPTIME_WRAP
        self.last_ticks = ticks
        if date_ns is None:
            return None, restarted
        if self.anchor is not None:
            estimate = self.anchor[1] + (ticks - self.anchor[0]) * _CS
            if abs(estimate - date_ns) <= self.STEP_NS:
                return estimate, restarted
        self.anchor = (ticks, date_ns)
        return date_ns, restarted


@dataclass(frozen=True)
class _Column:
    spec: SnmpColumn
    oid: bytes
    metric: int  # -1 when the index picks it (``by``)
    is_counter: bool


class SnmpPoller:
    """Polls one target (see the module docstring); never raises for what the target does."""

    def __init__(self, name: str, profile: SnmpProfile, client: SnmpClient,
                 health: TargetHealth, tally: ErrorTally, max_repetitions: int = 50,
                 ifname_refresh_s: float = 300.0, columns_per_request: int = 4,
                 stamper: CollectorClock | None = None, clock_tolerance_s: float = 300.0,
                 watch: tuple[bytes, ...] = ()) -> None:
        self.name = name
        self.profile = profile
        self.client = client
        self.health = health
        self.tally = tally
        self.max_repetitions = max_repetitions
        self.columns_per_request = columns_per_request
        self.ifname_refresh_s = ifname_refresh_s
        self.clock = SnmpClock()
        self.stamper = stamper or CollectorClock(health.clock.rate)
        self.clock_tolerance_s = clock_tolerance_s
        self._clock_kind = ""  # why the collector's clock is used ("" while the device's is)
        self.ifnames: dict[int, str] = {}
        self._ifnames_at = 0.0
        self._uptime = oid_bytes(profile.system.sys_uptime)
        self._date = oid_bytes(profile.system.hr_system_date)
        self._ifname = oid_bytes(profile.system.if_name)
        self._ifdescr = oid_bytes(profile.system.if_descr)
        #: scalars read with every poll's clock, and their values as of the last poll
        self._watch = watch
        self.watched: dict[bytes, int] = {}
        #: the last poll's ``sysUpTime`` (centiseconds) and its sample time (ns)
        self.uptime_cs: int | None = None
        self.stamp_ns = 0
        self.columns = [_Column(c, oid_bytes(c.oid), metric_id(c.metric) if c.metric else -1,
                                bool(c.metric) and bool(IS_COUNTER[metric_id(c.metric)]))
                        for c in profile.columns]
        #: metrics a primary (non-fallback) column delivered in the last poll
        self._delivered: set[str] = set()
        self._index_cache: dict[bytes, tuple[int, ...]] = {}
        self._series: set[tuple[int, int, int]] = set()
        #: the port vocabulary of this target's batches (codes stay stable across polls)
        self._ports: dict[str, int] = {"": 0}
        self._pending_reset = False
        #: rows per column in the last walk (trims the next walk's repetitions)
        self._rows_last: dict[bytes, int] = {}
        self.varbinds_total = 0

    async def poll(self) -> SampleBatch | None:
        """One poll; errors are counted in the health, never raised."""
        wall = time.monotonic()
        try:
            batch = await self._poll(wall)
        except Exception as exc:  # the poll's boundary: one target's failure stays its own
            self._failed(exc)
            return None
        return batch

    def _failed(self, exc: BaseException) -> None:
        self.health.session_ended()
        self.health.last_error = f"{type(exc).__name__}: {exc}"
        kind = ("timeout" if isinstance(exc, SnmpTimeout) else
                "snmp_error" if isinstance(exc, SnmpErrorStatus) else
                "malformed" if isinstance(exc, DecodeError) else "poll_failed")
        self.tally.record(self.health, kind, self.health.last_error)

    async def _poll(self, wall: float) -> SampleBatch:
        stamp, restarted, stamped_at = await self._time(wall)
        self.stamp_ns = stamp
        if restarted:
            self._pending_reset = True
            self.ifnames = {}
            self._series.clear()
        if not self.ifnames or wall - self._ifnames_at > self.ifname_refresh_s:
            await self._refresh_ifnames(wall)
        columns = [c for c in self.columns
                   if not (c.spec.fallback and c.spec.metric in self._delivered)]
        result = await walk_columns(self.client, [c.oid for c in columns], self.max_repetitions,
                                    self.columns_per_request, expected=self._rows_last)
        self._rows_last = {oid: len(rows) for oid, rows in result.rows.items()}
        self.varbinds_total += result.varbinds
        if result.non_increasing:
            self.tally.record(self.health, "non_increasing_oid",
                              f"{len(result.non_increasing)} column(s) went backwards")
        # a new interface: read the names again, but not on every poll of a device that keeps
        # answering for an ifIndex it has no name for
        if wall - self._ifnames_at > min(30.0, self.ifname_refresh_s) and any(
                self._unknown_ifindex(c, result.rows[c.oid]) for c in columns):
            await self._refresh_ifnames(wall)
        batch = self._build(stamp, columns, result.rows)
        if not self.health.connected:
            self.health.session_started(stamped_at)
        self.health.note_message(stamped_at)
        self.health.note_data(len(batch), stamp, stamped_at)
        return batch

    async def _time(self, started: float) -> tuple[int, bool, float]:
        """``(sample time, restarted, the monotonic instant the time belongs to)``."""
        varbinds = await self._get_clock()
        answered = time.monotonic()
        uptime = date = None
        for oid, tag, value in varbinds:
            if oid in self._watch:
                self._note_watched(oid, tag, value)
            elif oid == self._uptime and tag in NUMERIC and isinstance(value, int):
                uptime = value
            elif oid == self._date and tag == OCTET_STRING and isinstance(value, bytes):
                try:
                    date = parse_date_and_time(value)
                except DecodeError as exc:
                    self.tally.record(self.health, "wrong_type", f"hrSystemDate: {exc}")
        if uptime is None:
            raise DecodeError("the device did not return sysUpTime")
        self.uptime_cs = uptime
        device_ns, restarted = self.clock.update(uptime, date)
        health = self.health
        if device_ns is not None and clock_offset_ok(device_ns, answered, health.clock.rate,
                                                     self.clock_tolerance_s):
            health.clock_source, health.clock_note, self._clock_kind = "device", "", ""
            return device_ns, restarted, answered
        if device_ns is None:
            note, kind = "no hrSystemDate", "no_device_clock"
        else:
            offset = (device_ns - wall_ns(answered)) / 1e9
            note, kind = f"device clock off by {offset:+.0f} s", "device_clock_off"
        if kind != self._clock_kind:  # counted once each time the device's clock goes wrong
            self.tally.record(health, kind, f"{note}: samples carry the collector's clock")
            self._clock_kind = kind
        health.clock_source, health.clock_note = "collector", note
        if health.fabric.known:
            self.stamper.anchor(health.fabric.now_ns(started), started)
        # the one rule for collector-stamped samples: the clock read at the poll's start
        return self.stamper.stamp(started), restarted, started

    async def _get_clock(self) -> list[Varbind]:
        """The clock's GET, with the watched scalars; a device that refuses the longer request
        (an error-status) is asked for the clock alone, now and from then on."""
        if not self._watch:
            return await self.client.get([self._uptime, self._date])
        try:
            return await self.client.get([self._uptime, self._date, *self._watch])
        except SnmpErrorStatus as exc:
            self.tally.record(self.health, "watch_refused",
                              f"{exc} for the watched scalars: they are no longer read")
            self._watch, self.watched = (), {}
            return await self.client.get([self._uptime, self._date])

    def _note_watched(self, oid: bytes, tag: int, value: object) -> None:
        if tag in NUMERIC and isinstance(value, int):
            self.watched[oid] = value
            return
        # not served (noSuchObject / noSuchInstance) or not a number: not asked again
        self._watch = tuple(o for o in self._watch if o != oid)
        self.watched.pop(oid, None)
        if tag not in (NO_SUCH_OBJECT, NO_SUCH_INSTANCE):
            self.tally.record(self.health, "wrong_type",
                              f"watched scalar {'.'.join(map(str, subids(oid)))}: tag {tag}")

    def time_of(self, ticks: int) -> int | None:
        """The sample time (ns) of a ``TimeStamp`` read with the last poll's clock (the
        ``sysUpTime`` it names), counted back from that poll's own time; None when it names a
        moment after the poll (a wrap, a restart, nonsense)."""
        if self.uptime_cs is None or not 0 <= ticks <= self.uptime_cs:
            return None
        return self.stamp_ns - (self.uptime_cs - ticks) * _CS

    async def _refresh_ifnames(self, wall: float) -> None:
        names = await self._names(self._ifname)
        source = "ifName"
        if not names:
            # no ifXTable (old or host stacks): ifDescr is the name the device gives its ports
            names = await self._names(self._ifdescr)
            source = "ifDescr" if names else "none"
            if names and self.health.port_names != "ifDescr":
                self.tally.record(self.health, "no_ifname",
                                  "no ifName: ports are named by ifDescr")
        self.health.port_names = source
        self.ifnames = names
        self._ifnames_at = wall

    async def _names(self, column: bytes) -> dict[int, str]:
        result = await walk_columns(self.client, [column], self.max_repetitions)
        names = {}
        for index, _tag, value in result.rows[column]:
            parts = subids(index)
            if len(parts) == 1 and isinstance(value, bytes):
                name = value.decode(errors="replace").strip("\x00").strip()
                if name:
                    names[parts[0]] = name
        return names

    def _unknown_ifindex(self, column: _Column, rows: Rows) -> bool:
        position = column.spec.index.index("ifindex")
        for index, _, _ in rows:
            parts = self._index(index)
            if len(parts) > position and parts[position] not in self.ifnames:
                return True
        return False

    def _index(self, raw: bytes) -> tuple[int, ...]:
        parts = self._index_cache.get(raw)
        if parts is None:
            parts = self._index_cache[raw] = subids(raw)
        return parts

    def _build(self, stamp: int, columns: list[_Column],
               rows_by_column: dict[bytes, Rows]) -> SampleBatch:
        ports = self._ports
        port_col: list[int] = []
        metric_col: list[int] = []
        qual_col: list[int] = []
        value_col: list[float] = []
        flag_col: list[int] = []
        reset = FLAG_RESET if self._pending_reset else 0
        # a fallback column only counts when its metric's primary column returned nothing
        delivered = {m for c in columns if not c.spec.fallback and rows_by_column[c.oid]
                     for m in c.spec.metrics()}
        for column in columns:
            spec = column.spec
            rows = rows_by_column[column.oid]
            if spec.fallback and spec.metric in delivered:
                continue
            layout = spec.index
            width = len(layout)
            for raw_index, tag, value in rows:
                if tag not in NUMERIC or not isinstance(value, int):
                    self._bad_value(spec, tag, value)
                    continue
                parts = self._index(raw_index)
                if len(parts) != width:
                    self.tally.record(self.health, "unknown_index",
                                      f"{spec.oid}: index {parts} does not fit {layout}")
                    continue
                comps = dict(zip(layout, parts, strict=True))
                if spec.where and any(comps[k] != v for k, v in spec.where.items()):
                    continue
                metric = column.metric
                if metric < 0:
                    name = next((t.get(comps[k]) for k, t in spec.by.items()), None)
                    if name is None:
                        continue
                    metric = metric_id(name)
                port = self.ifnames.get(comps["ifindex"])
                if port is None:
                    self.tally.record(self.health, "unknown_ifindex",
                                      f"{spec.oid}: ifIndex {comps['ifindex']} has no ifName")
                    continue
                qual = comps.get("priority", -1)
                if "queue" in comps:
                    qual = comps["queue"] - spec.queue_base
                code = ports.get(port)
                if code is None:
                    code = ports[port] = len(ports)
                port_col.append(code)
                metric_col.append(metric)
                qual_col.append(qual)
                value_col.append(value * spec.scale if spec.scale != 1.0 else value)
                flags = FLAG_COUNTER32 if tag == COUNTER32 else 0
                if IS_COUNTER[metric]:
                    flags |= reset
                flag_col.append(flags)
        if reset:
            port_col.append(0)
            metric_col.append(COUNTER_RESET)
            qual_col.append(-1)
            value_col.append(1.0)
            flag_col.append(0)
            self._pending_reset = False
        self._delivered = delivered
        n = len(port_col)
        metric_arr = np.array(metric_col, dtype=np.uint16)
        qual_arr = np.array(qual_col, dtype=np.int16)
        port_arr = np.array(port_col, dtype=np.int32)
        self._series.update(zip(metric_col, port_col, qual_col, strict=True))
        self.health.expected = len(self._series)
        return SampleBatch(np.full(n, stamp, dtype=np.int64), np.zeros(n, dtype=np.int32),
                           port_arr, metric_arr, qual_arr, np.array(value_col, dtype=np.float64),
                           np.array(flag_col, dtype=np.uint8), (self.name,), tuple(ports))

    def _bad_value(self, spec: SnmpColumn, tag: int, value: object) -> None:
        if tag == NO_SUCH_OBJECT:
            self.tally.record(self.health, "no_such_object", f"{spec.oid}: noSuchObject")
        elif tag == NO_SUCH_INSTANCE:
            self.tally.record(self.health, "no_such_instance", f"{spec.oid}: noSuchInstance")
        else:
            self.tally.record(self.health, "wrong_type",
                              f"{spec.oid}: tag {tag:#x} value {value!r} is not a number")
