"""Every RPC the lab's gNMI targets serve, against the rules of the gNMI specification (0.8.0,
openconfig/reference rpc/gnmi/gnmi-specification.md), with a raw gRPC client: Capabilities (3.2),
Get (3.3), Set (3.4), Subscribe ONCE / POLL / STREAM with SAMPLE, ON_CHANGE and TARGET_DEFINED
(3.5), ``sync_response``, ``updates_only``, paths that do not exist (3.5.1.3) and errors as gRPC
status codes. Each test names the rule it checks."""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from pygnmi.spec.v080 import gnmi_pb2 as pb
from pygnmi.spec.v080 import gnmi_pb2_grpc as pb_grpc

from lab.gnmi import paths as gpath
from lab.runtime import Lab
from tests.lab.conftest import gnmi_target

OC, ARISTA, SONIC = "spine1", "leaf1", "leaf3"
MD = (("username", "admin"), ("password", "admin"))
TIMEOUT = 20.0


def _stub(lab: Lab, switch: str) -> tuple[grpc.Channel, pb_grpc.gNMIStub]:
    host, port = gnmi_target(lab, switch)
    channel = grpc.insecure_channel(f"{host}:{port}")
    return channel, pb_grpc.gNMIStub(channel)


def _path(text: str, origin: str = "") -> pb.Path:
    return gpath.to_pb(gpath.parse(text), origin=origin)


def _sub_list(paths: list[str], mode: int, *, sub_mode: int = pb.SAMPLE, interval_ns: int = 0,
              updates_only: bool = False, target: str = "",
              encoding: int = pb.PROTO, **kw: Any) -> pb.SubscriptionList:
    return pb.SubscriptionList(
        prefix=pb.Path(target=target), mode=mode, encoding=encoding, updates_only=updates_only,
        subscription=[pb.Subscription(path=_path(p), mode=sub_mode, sample_interval=interval_ns,
                                      **kw) for p in paths])


class _Stream:
    """A Subscribe RPC whose responses arrive on a queue, so a test can wait with a timeout."""

    def __init__(self, stub: pb_grpc.gNMIStub, first: pb.SubscribeRequest) -> None:
        self.requests: queue.Queue[pb.SubscribeRequest | None] = queue.Queue()
        self.requests.put(first)
        self.responses: queue.Queue[pb.SubscribeResponse | grpc.RpcError | None] = queue.Queue()
        self.call = stub.Subscribe(self._iter(), metadata=MD)
        threading.Thread(target=self._pump, daemon=True).start()

    def _iter(self) -> Iterator[pb.SubscribeRequest]:
        while (req := self.requests.get()) is not None:
            yield req

    def _pump(self) -> None:
        try:
            for resp in self.call:
                self.responses.put(resp)
            self.responses.put(None)            # closed with OK
        except grpc.RpcError as exc:
            self.responses.put(exc)

    def next(self, timeout: float = TIMEOUT) -> pb.SubscribeResponse | grpc.RpcError | None:
        return self.responses.get(timeout=timeout)

    def until_sync(self) -> list[pb.SubscribeResponse]:
        got = []
        while True:
            resp = self.next()
            assert isinstance(resp, pb.SubscribeResponse), resp
            if resp.sync_response:
                return got
            got.append(resp)

    def poll(self) -> None:
        self.requests.put(pb.SubscribeRequest(poll=pb.Poll()))

    def close(self) -> None:
        self.requests.put(None)
        self.call.cancel()


def _code(fn: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        fn()
    code = info.value.code()
    assert isinstance(code, grpc.StatusCode)
    return code


# ---------------------------------------------------------------------------- 3.2 Capabilities

def test_capabilities_lists_models_encodings_and_version(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        caps = stub.Capabilities(pb.CapabilityRequest(), metadata=MD, timeout=TIMEOUT)
        assert caps.gNMI_version == "0.8.0"
        assert {m.name for m in caps.supported_models} >= {"openconfig-interfaces",
                                                           "openconfig-qos"}
        assert all(m.organization and m.version for m in caps.supported_models)
        assert set(caps.supported_encodings) == {pb.JSON, pb.JSON_IETF, pb.PROTO}
        # every RPC authenticates: missing credentials are UNAUTHENTICATED
        assert _code(lambda: stub.Capabilities(pb.CapabilityRequest(), timeout=TIMEOUT)) == \
            grpc.StatusCode.UNAUTHENTICATED


# ---------------------------------------------------------------------------- 3.3 Get

def test_get_returns_timestamped_notifications_per_path(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        req = pb.GetRequest(path=[_path("/interfaces/interface[name=Ethernet1]/state/oper-status"),
                                  _path("/interfaces/interface[name=Ethernet2]/state/counters")],
                            encoding=pb.PROTO)
        resp = stub.Get(req, metadata=MD, timeout=TIMEOUT)
        # 3.3.2: one notification per path; timestamps are ns since the Unix epoch
        assert len(resp.notification) == 2
        now = time.time_ns()
        for note in resp.notification:
            assert mixed_lab.epoch_ns <= note.timestamp <= now + 10**9 * 3600
        first = resp.notification[0].update[0]
        assert first.val.string_val == "UP"
        assert gpath.from_pb(first.path)[-1][0] == "oper-status"
        counters = {gpath.from_pb(u.path)[-1][0]: u.val.uint_val
                    for u in resp.notification[1].update}
        assert counters["in-octets"] > 0
        # 3.3.1 type CONFIG: only configuration leaves
        cfg = stub.Get(pb.GetRequest(path=[_path("/interfaces/interface[name=Ethernet1]")],
                                     type=pb.GetRequest.CONFIG, encoding=pb.PROTO),
                       metadata=MD, timeout=TIMEOUT)
        names = [[e[0] for e in gpath.from_pb(u.path)] for n in cfg.notification
                 for u in n.update]
        assert names and all("config" in n and "state" not in n for n in names)


def test_get_errors_are_status_codes(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        # 3.3.4: a path that does not exist is NOT_FOUND; an unsupported encoding UNIMPLEMENTED
        missing = pb.GetRequest(path=[_path("/interfaces/interface[name=Ethernet99]")])
        assert _code(lambda: stub.Get(missing, metadata=MD, timeout=TIMEOUT)) == \
            grpc.StatusCode.NOT_FOUND
        ascii_req = pb.GetRequest(path=[_path("/interfaces")], encoding=pb.ASCII)
        assert _code(lambda: stub.Get(ascii_req, metadata=MD, timeout=TIMEOUT)) == \
            grpc.StatusCode.UNIMPLEMENTED
        bad_origin = pb.GetRequest(path=[_path("/interfaces", origin="cli")])
        assert _code(lambda: stub.Get(bad_origin, metadata=MD, timeout=TIMEOUT)) == \
            grpc.StatusCode.INVALID_ARGUMENT


def test_get_serves_the_lossless_buffer_configuration(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        path = "/qos/buffer/buffer-profiles/buffer-profile[name=lossless_pg]/config"
        resp = stub.Get(pb.GetRequest(path=[_path(path)], encoding=pb.JSON_IETF), metadata=MD,
                        timeout=TIMEOUT)
        doc = json.loads(resp.notification[0].update[0].val.json_ietf_val)
        assert doc["xoff"] == "400000" and doc["xon"] == "336000" and doc["headroom"] == "200000"


# ---------------------------------------------------------------------------- 3.4 Set

def test_set_applies_and_answers_per_operation(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, ARISTA)
    enabled = "/interfaces/interface[name=Ethernet2]/config/enabled"
    oper = "/interfaces/interface[name=Ethernet2]/state/oper-status"
    try:
        with channel:
            req = pb.SetRequest(update=[pb.Update(path=_path(enabled),
                                                  val=pb.TypedValue(bool_val=False))])
            resp = stub.Set(req, metadata=MD, timeout=TIMEOUT)
            # 3.4.2: one UpdateResult per operation, with its path and op, and a timestamp
            assert [(r.op, gpath.from_pb(r.path)) for r in resp.response] == [
                (pb.UpdateResult.UPDATE, gpath.parse(enabled))]
            assert resp.timestamp >= mixed_lab.epoch_ns
            # 3.4.3: the change is applied when the response is sent
            got = stub.Get(pb.GetRequest(path=[_path(oper)], encoding=pb.PROTO), metadata=MD,
                           timeout=TIMEOUT)
            assert got.notification[0].update[0].val.string_val == "DOWN"
            # a delete of config/enabled returns it to its default (true)
            resp = stub.Set(pb.SetRequest(delete=[_path(enabled)]), metadata=MD, timeout=TIMEOUT)
            assert resp.response[0].op == pb.UpdateResult.DELETE
            got = stub.Get(pb.GetRequest(path=[_path(oper)], encoding=pb.PROTO), metadata=MD,
                           timeout=TIMEOUT)
            assert got.notification[0].update[0].val.string_val == "UP"
            # 3.4.7 errors: what cannot be set is INVALID_ARGUMENT, an unknown element NOT_FOUND
            bad = pb.SetRequest(update=[pb.Update(path=_path(
                "/interfaces/interface[name=Ethernet2]/config/mtu"),
                val=pb.TypedValue(uint_val=9000))])
            assert _code(lambda: stub.Set(bad, metadata=MD, timeout=TIMEOUT)) == \
                grpc.StatusCode.INVALID_ARGUMENT
            unknown = pb.SetRequest(update=[pb.Update(path=_path(
                "/interfaces/interface[name=Ethernet77]/config/enabled"),
                val=pb.TypedValue(bool_val=False))])
            assert _code(lambda: stub.Set(unknown, metadata=MD, timeout=TIMEOUT)) == \
                grpc.StatusCode.NOT_FOUND
    finally:
        mixed_lab.set_admin(ARISTA, "Ethernet2", True)


# ---------------------------------------------------------------------------- 3.5 Subscribe

def test_once_sends_everything_then_sync_then_closes(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            ["/interfaces/interface[name=Ethernet1]/state/counters"], pb.SubscriptionList.ONCE)))
        updates = s.until_sync()
        assert len(updates) == 1 and len(updates[0].update.update) > 5
        assert s.next() is None              # 3.5.1.5.1: then the RPC is closed (OK)


def test_poll_answers_each_poll_and_nothing_before(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            ["/interfaces/interface[name=Ethernet1]/state/counters/in-octets"],
            pb.SubscriptionList.POLL)))
        try:
            with pytest.raises(queue.Empty):
                s.next(timeout=1.0)
            stamps = []
            for _ in range(2):
                s.poll()
                got = s.until_sync()
                assert len(got) == 1
                stamps.append(got[0].update.timestamp)
                time.sleep(0.3)
            assert stamps[1] > stamps[0]
        finally:
            s.close()


def test_stream_sample_initial_set_sync_then_one_sample_per_interval(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            ["/interfaces/interface[name=Ethernet1]/state/counters/in-octets"],
            pb.SubscriptionList.STREAM, interval_ns=500_000_000)))
        try:
            assert len(s.until_sync()) == 1        # the current value first, then the sync
            stamps = []
            for _ in range(3):
                resp = s.next()
                assert isinstance(resp, pb.SubscribeResponse) and not resp.sync_response
                stamps.append(resp.update.timestamp)
            assert [b - a for a, b in itertools.pairwise(stamps)] == [500_000_000] * 2
        finally:
            s.close()


def test_stream_on_change_sends_only_changes(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            ["/interfaces/interface[name=Ethernet3]/state/oper-status"],
            pb.SubscriptionList.STREAM, sub_mode=pb.ON_CHANGE)))
        try:
            initial = s.until_sync()
            assert initial[0].update.update[0].val.string_val == "UP"
            with pytest.raises(queue.Empty):            # nothing while nothing changes
                s.next(timeout=1.0)
            mixed_lab.set_admin(OC, "Ethernet3", False)
            resp = s.next()
            assert isinstance(resp, pb.SubscribeResponse)
            assert resp.update.update[0].val.string_val == "DOWN"
        finally:
            mixed_lab.set_admin(OC, "Ethernet3", True)
            s.close()


def test_target_defined_streams_status_on_change_and_counters_sampled(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            ["/interfaces/interface[name=Ethernet1]/state"], pb.SubscriptionList.STREAM,
            sub_mode=pb.TARGET_DEFINED)))
        try:
            s.until_sync()
            seen = set()
            for _ in range(4):
                resp = s.next()
                assert isinstance(resp, pb.SubscribeResponse)
                seen |= {gpath.from_pb(u.path)[-1][0] for u in resp.update.update}
            # counters keep coming; the (unchanging) status leaves do not
            assert "in-octets" in seen and "oper-status" not in seen
        finally:
            s.close()


def test_updates_only_skips_the_initial_set(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)
    path = "/interfaces/interface[name=Ethernet1]/state/counters/in-octets"
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            [path], pb.SubscriptionList.STREAM, interval_ns=500_000_000, updates_only=True)))
        try:
            assert s.until_sync() == []            # 3.5.1.2: the sync comes first
            resp = s.next()
            assert isinstance(resp, pb.SubscribeResponse) and resp.update.update
        finally:
            s.close()
        once = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            [path], pb.SubscriptionList.ONCE, updates_only=True)))
        assert once.until_sync() == [] and once.next() is None


@pytest.mark.parametrize("switch,target,path", [
    (OC, "", "/interfaces/interface[name=Ethernet99]/state/counters"),
    (ARISTA, "", "/qos/interfaces/interface[interface-id=Ethernet1]/nonexistent"),
    (SONIC, "COUNTERS_DB", "/COUNTERS/Ethernet99"),
])
def test_a_path_with_no_data_gets_sync_and_the_stream_stays_open(mixed_lab: Lab, switch: str,
                                                                  target: str, path: str) -> None:
    """3.5.1.3: subscribing to a path that does not (yet) exist MUST be allowed and the target
    MUST NOT close the RPC; the empty initial set is followed by ``sync_response``."""
    channel, stub = _stub(mixed_lab, switch)
    enc = pb.JSON_IETF if target else pb.PROTO
    with channel:
        s = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            [path], pb.SubscriptionList.STREAM, target=target, encoding=enc)))
        try:
            assert s.until_sync() == []
            with pytest.raises(queue.Empty):          # open, silent, not an error
                s.next(timeout=1.5)
        finally:
            s.close()
        once = _Stream(stub, pb.SubscribeRequest(subscribe=_sub_list(
            [path], pb.SubscriptionList.ONCE, target=target, encoding=enc)))
        assert once.until_sync() == [] and once.next() is None


def test_subscribe_errors_are_status_codes(mixed_lab: Lab) -> None:
    channel, stub = _stub(mixed_lab, OC)

    def first_error(req: pb.SubscribeRequest, md: Any = MD) -> grpc.StatusCode:
        call = stub.Subscribe(iter([req]), metadata=md, timeout=TIMEOUT)
        return _code(lambda: list(call))

    path = "/interfaces/interface[name=Ethernet1]/state/counters"
    with channel:
        # the first request must carry a SubscriptionList; a list must not be empty
        assert first_error(pb.SubscribeRequest(poll=pb.Poll())) == \
            grpc.StatusCode.INVALID_ARGUMENT
        assert first_error(pb.SubscribeRequest(subscribe=pb.SubscriptionList())) == \
            grpc.StatusCode.INVALID_ARGUMENT
        # 3.5.1.5.2: a sample_interval the target cannot support is INVALID_ARGUMENT
        fast = _sub_list([path], pb.SubscriptionList.STREAM, interval_ns=1_000)
        assert first_error(pb.SubscribeRequest(subscribe=fast)) == \
            grpc.StatusCode.INVALID_ARGUMENT
        ascii_list = _sub_list([path], pb.SubscriptionList.STREAM, encoding=pb.ASCII)
        assert first_error(pb.SubscribeRequest(subscribe=ascii_list)) == \
            grpc.StatusCode.UNIMPLEMENTED
        ok = _sub_list([path], pb.SubscriptionList.ONCE)
        assert first_error(pb.SubscribeRequest(subscribe=ok), md=()) == \
            grpc.StatusCode.UNAUTHENTICATED
