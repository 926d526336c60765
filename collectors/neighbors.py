"""Every target's LLDP neighbours read once, over its own protocol: what ``rocewatch topology
discover`` builds the topology from.

gNMI targets are read with :func:`collectors.gnmi.lldp.read_neighbors` (their profile says the
dialect and whether the target serves Get), SNMP targets with
:func:`collectors.snmp.lldp.read_neighbors`; at most ``concurrency`` reads run at once, each
bounded by ``timeout_s``. A report is stamped with the device's clock (gNMI notifications'
timestamps, SNMP's ``hrSystemDate``), else the collector's. A target that cannot be read is named
with the reason and does not stop the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collectors.gnmi.channel import open_channel
from collectors.gnmi.lldp import read_neighbors as gnmi_read
from collectors.profile import GnmiProfile, load_profile
from collectors.snmp.ber import OCTET_STRING, oid_bytes
from collectors.snmp.client import SnmpClient, V2cChannel, V3Target
from collectors.snmp.lldp import read_neighbors as snmp_read
from collectors.snmp.poll import parse_date_and_time
from pipeline.errors import ConfigError, DecodeError
from pipeline.inventory import Target, resolve_secrets
from pipeline.topology.neighbors import NeighborReport

HR_SYSTEM_DATE = oid_bytes("1.3.6.1.2.1.25.1.2.0")


@dataclass
class Read:
    """What a one-off read got: the reports, and the targets that failed with why."""

    reports: list[NeighborReport] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def read_all(targets: Sequence[Target], env: Mapping[str, str],
             profile_dirs: tuple[str, ...] = (), timeout_s: float = 10.0,
             concurrency: int = 64) -> Read:
    """Read every target once (blocking: an event loop of its own)."""
    return asyncio.run(_read_all(targets, env, profile_dirs, timeout_s, concurrency))


async def _read_all(targets: Sequence[Target], env: Mapping[str, str],
                    profile_dirs: tuple[str, ...], timeout_s: float, concurrency: int) -> Read:
    out = Read()
    gate = asyncio.Semaphore(max(1, concurrency))
    channel = V2cChannel()
    await channel.open()
    engines: dict[tuple[str, ...], Any] = {}

    async def one(target: Target) -> None:
        async with gate:
            try:
                report = await asyncio.wait_for(_read(target, env, profile_dirs, timeout_s,
                                                      channel, engines), timeout_s * 3)
            except Exception as exc:  # one target's failure stays its own
                out.failed[target.name] = f"{type(exc).__name__}: {exc}"
                return
            out.reports.append(report)

    try:
        await asyncio.gather(*(one(t) for t in targets))
    finally:
        channel.close()
        for engine in engines.values():
            engine.close_dispatcher()
    out.reports.sort(key=lambda r: r.device)
    return out


async def _read(target: Target, env: Mapping[str, str], profile_dirs: tuple[str, ...],
                timeout_s: float, channel: V2cChannel,
                engines: dict[tuple[str, ...], Any]) -> NeighborReport:
    secrets = resolve_secrets(target, env)
    if target.protocol == "gnmi":
        profile = load_profile(target.profile, profile_dirs)
        if not isinstance(profile, GnmiProfile):
            raise ConfigError(f"target {target.name}: profile {target.profile} is not gNMI")
        grpc_channel = open_channel(target)
        try:
            return await gnmi_read(grpc_channel, target, profile, secrets, timeout_s)
        finally:
            await grpc_channel.close(grace=None)
    snmp = target.snmp
    assert snmp is not None
    client: SnmpClient
    if snmp.version == "3":
        key = (snmp.user, snmp.auth_protocol, secrets.auth_key, snmp.priv_protocol,
               secrets.priv_key)
        if key not in engines:
            from pysnmp.hlapi.v3arch.asyncio import SnmpEngine

            engines[key] = SnmpEngine()
        client = V3Target(engines[key], target, secrets)
    else:
        client = channel.target(target, secrets)
    ts = await _device_time(client)
    return await snmp_read(client, target.name, ts, snmp.max_repetitions,
                           snmp.columns_per_request)


async def _device_time(client: SnmpClient) -> int:
    """The device's ``hrSystemDate`` in ns, else the collector's clock."""
    for oid, tag, value in await client.get([HR_SYSTEM_DATE]):
        if oid == HR_SYSTEM_DATE and tag == OCTET_STRING and isinstance(value, bytes):
            try:
                return parse_date_and_time(value)
            except DecodeError:
                break
    return time.time_ns()
