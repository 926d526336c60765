"""SNMP GET and GETBULK for one target, v2c or v3, in the collector's asyncio loop.

Both kinds answer with :data:`~collectors.snmp.ber.Varbind` lists (OIDs as encoded bytes), so the
poller does not care which version it speaks.

* :class:`V2cChannel` is one UDP socket (pysnmp's asyncio carrier) shared by every v2c target of
  a collector. pysnmp builds and encodes the requests; responses are matched by request id and
  decoded by :mod:`collectors.snmp.ber` (pyasn1 is the bottleneck otherwise). Timeouts and
  retries are per request, so a dead target only ever waits on its own futures.
* :class:`V3Target` speaks SNMPv3 USM (authNoPriv or authPriv) through pysnmp's v3arch hlapi and
  its engine, which does the keys, the timeliness window and the crypto.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any, Protocol

from pyasn1.codec.ber import encoder
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.hlapi.v3arch import asyncio as hlapi
from pysnmp.proto import api, rfc1902, rfc1905

from collectors.snmp.ber import (
    COUNTER32,
    COUNTER64,
    END_OF_MIB_VIEW,
    GAUGE32,
    INTEGER,
    IP_ADDRESS,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    NULL,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    OPAQUE,
    TIMETICKS,
    Varbind,
    decode_oid,
    decode_response,
    encode_oid,
)
from pipeline.errors import CollectorError, DecodeError
from pipeline.inventory import Secrets, Target

_V2C = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]

#: RFC 3416 error-status 1: the response would not fit; ask for fewer repetitions
TOO_BIG = 1


class SnmpTimeout(CollectorError):
    """No response within the timeout, after every retry."""


class SnmpErrorStatus(CollectorError):
    """The agent answered with a non-zero error-status."""

    def __init__(self, status: int, index: int) -> None:
        self.status = status
        self.index = index
        super().__init__(f"error-status {status} at varbind {index}")


class SnmpClient(Protocol):
    async def get(self, oids: Sequence[bytes]) -> list[Varbind]:
        """GET of the given OIDs (encoded bytes)."""

    async def bulk(self, oids: Sequence[bytes], max_repetitions: int) -> list[Varbind]:
        """GETBULK with no non-repeaters: ``max_repetitions`` rows of successors, row-major."""


class V2cChannel:
    """One UDP socket for all v2c targets of a collector; see the module docstring."""

    def __init__(self, bind: tuple[str, int] | None = None) -> None:
        self._bind = bind
        self._transport: udp.UdpAsyncioTransport | None = None
        self._pending: dict[int, asyncio.Future[tuple[int, int, list[Varbind]]]] = {}
        self._ids = itertools.count(1)
        self.malformed = 0

    async def open(self) -> None:
        transport = udp.UdpAsyncioTransport(loop=asyncio.get_running_loop())
        transport.register_callback(self._received)
        transport.open_client_mode(self._bind)
        await transport._lport  # the endpoint's creation (pysnmp starts it as a task)
        self._transport = transport

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close_transport()
            self._transport = None
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()

    def _received(self, transport: Any, address: Any, data: bytes) -> None:
        try:
            request_id, status, index, varbinds = decode_response(data)
        except DecodeError:
            # unattributable: the request id sits inside what could not be read
            self.malformed += 1
            return
        future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result((status, index, varbinds))

    def target(self, target: Target, secrets: Secrets) -> V2cTarget:
        assert target.snmp is not None
        return V2cTarget(self, (target.host, target.port), secrets.community,
                         target.snmp.timeout_s, target.snmp.retries)

    async def request(self, address: tuple[str, int], community: str, pdu: Any,
                      timeout: float, retries: int) -> list[Varbind]:
        if self._transport is None:
            raise CollectorError("the SNMP channel is not open")
        request_id = next(self._ids) & 0x7FFFFFFF
        _V2C.apiPDU.set_request_id(pdu, request_id)
        msg = _V2C.Message()
        _V2C.apiMessage.set_defaults(msg)
        _V2C.apiMessage.set_community(msg, community)
        _V2C.apiMessage.set_pdu(msg, pdu)
        data = encoder.encode(msg)
        loop = asyncio.get_running_loop()
        try:
            for _ in range(retries + 1):
                future: asyncio.Future[tuple[int, int, list[Varbind]]] = loop.create_future()
                self._pending[request_id] = future
                self._transport.send_message(data, address)
                try:
                    status, index, varbinds = await asyncio.wait_for(future, timeout)
                except TimeoutError:
                    continue
                if status:
                    raise SnmpErrorStatus(status, index)
                return varbinds
        finally:
            self._pending.pop(request_id, None)
        raise SnmpTimeout(f"no response from {address[0]}:{address[1]} in {retries + 1} tries "
                          f"of {timeout:g}s")


def _null_varbinds(oids: Sequence[bytes]) -> list[tuple[tuple[int, ...], Any]]:
    return [(decode_oid(oid), _V2C.null) for oid in oids]


class V2cTarget:
    """A v2c target on the shared channel."""

    def __init__(self, channel: V2cChannel, address: tuple[str, int], community: str,
                 timeout: float, retries: int) -> None:
        self.channel = channel
        self.address = address
        self.community = community
        self.timeout = timeout
        self.retries = retries

    async def get(self, oids: Sequence[bytes]) -> list[Varbind]:
        pdu = _V2C.GetRequestPDU()
        _V2C.apiPDU.set_defaults(pdu)
        _V2C.apiPDU.set_varbinds(pdu, _null_varbinds(oids))
        return await self.channel.request(self.address, self.community, pdu, self.timeout,
                                          self.retries)

    async def bulk(self, oids: Sequence[bytes], max_repetitions: int) -> list[Varbind]:
        pdu = _V2C.GetBulkRequestPDU()
        _V2C.apiBulkPDU.set_defaults(pdu)
        _V2C.apiBulkPDU.set_non_repeaters(pdu, 0)
        _V2C.apiBulkPDU.set_max_repetitions(pdu, max_repetitions)
        _V2C.apiBulkPDU.set_varbinds(pdu, _null_varbinds(oids))
        return await self.channel.request(self.address, self.community, pdu, self.timeout,
                                          self.retries)


_AUTH = {"md5": hlapi.USM_AUTH_HMAC96_MD5, "sha": hlapi.USM_AUTH_HMAC96_SHA,
         "sha224": hlapi.USM_AUTH_HMAC128_SHA224, "sha256": hlapi.USM_AUTH_HMAC192_SHA256,
         "sha384": hlapi.USM_AUTH_HMAC256_SHA384, "sha512": hlapi.USM_AUTH_HMAC384_SHA512}
_PRIV = {"des": hlapi.USM_PRIV_CBC56_DES, "3des": hlapi.USM_PRIV_CBC168_3DES,
         "aes": hlapi.USM_PRIV_CFB128_AES, "aes192": hlapi.USM_PRIV_CFB192_AES,
         "aes256": hlapi.USM_PRIV_CFB256_AES}
# pysnmp value classes → the BER tag our varbinds carry (subclasses first: Counter32 is an
# Integer in pyasn1's eyes)
_TAGS: tuple[tuple[type[Any], int], ...] = (
    (rfc1902.Counter64, COUNTER64), (rfc1902.Counter32, COUNTER32), (rfc1902.Gauge32, GAUGE32),
    (rfc1902.TimeTicks, TIMETICKS), (rfc1902.IpAddress, IP_ADDRESS), (rfc1902.Opaque, OPAQUE),
    (rfc1902.Integer32, INTEGER), (rfc1902.Integer, INTEGER), (rfc1902.OctetString, OCTET_STRING),
    (rfc1902.ObjectName, OBJECT_IDENTIFIER), (rfc1905.NoSuchObject, NO_SUCH_OBJECT),
    (rfc1905.NoSuchInstance, NO_SUCH_INSTANCE), (rfc1905.EndOfMibView, END_OF_MIB_VIEW),
)


def _varbind(name: Any, value: Any) -> Varbind:
    oid = encode_oid(tuple(name))
    for cls, tag in _TAGS:
        if isinstance(value, cls):
            if tag >= NO_SUCH_OBJECT:
                return oid, tag, None
            if tag in (OCTET_STRING, IP_ADDRESS, OPAQUE):
                return oid, tag, value.asOctets()
            if tag == OBJECT_IDENTIFIER:
                return oid, tag, encode_oid(tuple(value))
            return oid, tag, int(value)
    return oid, NULL, None


class V3Target:
    """An SNMPv3 USM target through pysnmp's engine (shared by the collector's v3 targets)."""

    def __init__(self, engine: Any, target: Target, secrets: Secrets) -> None:
        snmp = target.snmp
        assert snmp is not None
        self.engine = engine
        self.name = target.name
        self.address = (target.host, target.port)
        self.timeout = snmp.timeout_s
        self.retries = snmp.retries
        priv = _PRIV[snmp.priv_protocol] if secrets.priv_key else hlapi.USM_PRIV_NONE
        self.auth = hlapi.UsmUserData(snmp.user, authKey=secrets.auth_key,
                                      privKey=secrets.priv_key or None,
                                      authProtocol=_AUTH[snmp.auth_protocol], privProtocol=priv)
        self.context = hlapi.ContextData(contextName=snmp.context)
        self._transport: Any = None

    async def _target(self) -> Any:
        if self._transport is None:
            self._transport = await hlapi.UdpTransportTarget.create(
                self.address, timeout=self.timeout, retries=self.retries)
        return self._transport

    def _check(self, error_indication: Any, status: Any, index: Any) -> None:
        if error_indication:
            text = str(error_indication)
            if "timeout" in text.lower() or "no snmp response" in text.lower():
                raise SnmpTimeout(f"{self.name}: {text}")
            raise CollectorError(f"{self.name}: {text}")
        if status:
            raise SnmpErrorStatus(int(status), int(index))

    async def get(self, oids: Sequence[bytes]) -> list[Varbind]:
        objects = [hlapi.ObjectType(hlapi.ObjectIdentity(decode_oid(o))) for o in oids]
        err, status, index, varbinds = await hlapi.get_cmd(
            self.engine, self.auth, await self._target(), self.context, *objects, lookupMib=False)
        self._check(err, status, index)
        return [_varbind(name, value) for name, value in varbinds]

    async def bulk(self, oids: Sequence[bytes], max_repetitions: int) -> list[Varbind]:
        objects = [hlapi.ObjectType(hlapi.ObjectIdentity(decode_oid(o))) for o in oids]
        err, status, index, varbinds = await hlapi.bulk_cmd(
            self.engine, self.auth, await self._target(), self.context, 0, max_repetitions,
            *objects, lookupMib=False)
        self._check(err, status, index)
        return [_varbind(name, value) for name, value in varbinds]
