"""A simulated switch's SNMP agent: a pysnmp 7 command responder over UDP on 127.0.0.1.

It accepts SNMPv2c with the lab's community and SNMPv3 with the lab's user at authPriv
(HMAC-SHA-96 and CFB128-AES-128 by default), both read-only. GET, GETNEXT and GETBULK are answered
from :class:`~lab.snmp.mib.SwitchMib` with live values; SET is refused (``notWritable``): the lab's
write path is gNMI. Each switch has its own engine ID, so SNMPv3 discovery works per agent.
"""

from __future__ import annotations

import hashlib
import socket
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.smi import error as smi_error

from lab.inventory import Credentials
from lab.sim.view import SimView
from lab.snmp.mib import SwitchMib

_AUTH = {"SHA": config.USM_AUTH_HMAC96_SHA, "MD5": config.USM_AUTH_HMAC96_MD5,
         "SHA256": config.USM_AUTH_HMAC192_SHA256}
_PRIV = {"AES": config.USM_PRIV_CFB128_AES, "DES": config.USM_PRIV_CBC56_DES,
         "AES256": config.USM_PRIV_CFB256_AES}
_READ_VIEW = (1, 3)


class LiveInstrumentation:
    """The MIB instrumentation pysnmp's responders call, backed by the simulation."""

    def __init__(self, mib: SwitchMib, view: SimView) -> None:
        self.mib = mib
        self.view = view
        self.requests = 0

    def read_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        self.requests += 1
        snap = self.view.snapshot
        out = []
        for name, _val in var_binds:
            oid = tuple(name)
            value = self.mib.get(oid, snap)
            if value is None:
                value = rfc1905.noSuchInstance if self._has_prefix(oid) else rfc1905.noSuchObject
            out.append((rfc1902.ObjectName(oid), value))
        return out

    def read_next_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        self.requests += 1
        snap = self.view.snapshot
        out: list[tuple[Any, Any]] = []
        for name, _val in var_binds:
            found = self.mib.next(tuple(name), snap)
            if found is None:
                out.append((name, rfc1905.endOfMibView))
            else:
                out.append((rfc1902.ObjectName(found[0]), found[1]))
        return out

    def write_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        raise smi_error.NotWritableError(name=var_binds[0][0] if var_binds else None, idx=0)

    def _has_prefix(self, oid: tuple[int, ...]) -> bool:
        nxt = self.mib.next(oid[:-1], self.view.snapshot)
        return nxt is not None and nxt[0][: len(oid) - 1] == oid[:-1]


class SnmpAgent:
    def __init__(self, switch: str, mib: SwitchMib, view: SimView, creds: Credentials) -> None:
        self.switch = switch
        engine_id = b"\x80\x00\x1f\x88\x04" + hashlib.sha1(switch.encode()).digest()[:8]
        self.engine = engine.SnmpEngine(snmpEngineID=rfc1902.OctetString(engine_id))
        self.instrum = LiveInstrumentation(mib, view)
        self.creds = creds
        self._sock: socket.socket | None = None

    def start(self, port: int) -> int:
        """Bind and register with the running event loop; returns the UDP port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", port))
        self._sock = sock
        eng, c = self.engine, self.creds
        config.add_transport(eng, udp.DOMAIN_NAME, udp.UdpTransport().open_server_mode(sock=sock))
        config.add_v1_system(eng, "lab-ro", c.community)
        config.add_v3_user(eng, c.v3_user, _AUTH[c.v3_auth_protocol], c.v3_auth_key,
                           _PRIV[c.v3_priv_protocol], c.v3_priv_key)
        config.add_vacm_user(eng, 2, "lab-ro", "noAuthNoPriv", _READ_VIEW)
        config.add_vacm_user(eng, 3, c.v3_user, "authPriv", _READ_VIEW)
        ctx = context.SnmpContext(eng)
        # pysnmp resolves every request through the context's MIB instrumentation
        ctx.context_names[b""] = self.instrum
        cmdrsp.GetCommandResponder(eng, ctx)
        cmdrsp.NextCommandResponder(eng, ctx)
        cmdrsp.BulkCommandResponder(eng, ctx)
        cmdrsp.SetCommandResponder(eng, ctx)
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        self.engine.close_dispatcher()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
