"""A simulated switch's gNMI target: Capabilities, Get, Set and Subscribe over grpc.aio.

Every RPC checks the ``username``/``password`` call metadata (what pygnmi and gnmic send) and fails
with UNAUTHENTICATED otherwise. Get returns, per requested path, per-leaf updates for PROTO, and for
JSON / JSON_IETF a JSON tree of the requested container (per-leaf updates when the path has
wildcards). Set accepts the drain workflow's writes:
``/interfaces/interface[name=X]/config/enabled`` (leaf, or the ``config``/interface container as
JSON), and on SONiC switches ``CONFIG_DB``
``PORT/X/admin_status``; disabling takes the port (and its link) down in the simulation before the
response returns.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb
from pygnmi.spec.v080 import gnmi_pb2_grpc as pb_grpc

from lab.gnmi import paths as gpath
from lab.gnmi.dialects import PathError, SwitchModel
from lab.gnmi.jsontree import build_tree
from lab.gnmi.lldp import OcLldpSelection
from lab.gnmi.render import LeafSelection
from lab.gnmi.subscribe import SubscriptionPlan, run_stream, snapshot_responses
from lab.sim.view import SimControl, SimView

GNMI_VERSION = "0.8.0"
Ctx: TypeAlias = grpc.aio.ServicerContext[Any, Any]
_SET_IGNORED = {"name", "description"}


class GnmiTarget(pb_grpc.gNMIServicer):  # type: ignore[misc]
    def __init__(self, model: SwitchModel, view: SimView, control: SimControl,
                 credentials: tuple[str, str] | None, default_interval_s: float) -> None:
        self.model = model
        self.view = view
        self.control = control
        self.credentials = credentials
        self.default_interval_s = default_interval_s
        self.notifications_sent = 0

    # ------------------------------------------------------------------ RPCs

    async def Capabilities(  # noqa: N802 - gNMI method name
        self, request: pb.CapabilityRequest, context: Ctx) -> pb.CapabilityResponse:
        await self._authorize(context)
        return pb.CapabilityResponse(
            supported_models=self.model.models(),
            supported_encodings=[pb.JSON, pb.JSON_IETF, pb.PROTO],
            gNMI_version=GNMI_VERSION)

    async def Get(  # noqa: N802 - gNMI method name
        self, request: pb.GetRequest, context: Ctx) -> pb.GetResponse:
        await self._authorize(context)
        enc = request.encoding
        if enc not in (pb.JSON, pb.JSON_IETF, pb.PROTO):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED,
                                f"encoding {pb.Encoding.Name(enc)} is not supported")
        snap = self.view.snapshot
        ts = self.view.ts_ns(snap)
        notes = []
        for path in request.path or [pb.Path()]:
            try:
                sel, full = self.model.resolve(request.prefix, path, enc)
            except PathError as exc:
                await context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
                raise
            if isinstance(sel, OcLldpSelection):
                if request.type != pb.GetRequest.ALL:
                    sel.restrict("config" if request.type == pb.GetRequest.CONFIG else "state")
                tree = sel.tree(snap, ts)
                if tree is not None:
                    notes.append(tree)
                    continue
            if isinstance(sel, LeafSelection):
                leaves = _filter_type(sel, request.type, self.model, enc)
                if leaves is None:
                    continue
                sel = leaves
                if enc != pb.PROTO and not gpath.has_wildcard(full):
                    tree = build_tree(self.model.table, leaves.sel, full, snap,
                                      self.model.epoch_ns, ietf=enc == pb.JSON_IETF)
                    note = pb.Notification(timestamp=ts, prefix=leaves.resp.update.prefix)
                    u = note.update.add(path=gpath.to_pb(full))
                    body = json.dumps(tree).encode()
                    if enc == pb.JSON_IETF:
                        u.val.json_ietf_val = body
                    else:
                        u.val.json_val = body
                    notes.append(note)
                    continue
            resp = sel.full(snap, ts)
            note = pb.Notification()
            note.CopyFrom(resp.update)
            notes.append(note)
        return pb.GetResponse(notification=notes)

    async def Set(  # noqa: N802 - gNMI method name
        self, request: pb.SetRequest, context: Ctx) -> pb.SetResponse:
        await self._authorize(context)
        changes: dict[int, bool] = {}
        results: list[pb.UpdateResult] = []
        try:
            for path in request.delete:
                port, value = self._interpret(request.prefix, path, None)
                changes[port] = value
                results.append(pb.UpdateResult(path=path, op=pb.UpdateResult.DELETE))
            for op, items in ((pb.UpdateResult.REPLACE, request.replace),
                              (pb.UpdateResult.UPDATE, request.update)):
                for upd in items:
                    port, value = self._interpret(request.prefix, upd.path, upd.val)
                    changes[port] = value
                    results.append(pb.UpdateResult(path=upd.path, op=op))
        except PathError as exc:
            await context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
            raise
        last = 0
        for port, up in changes.items():
            last = self.control.send("admin", port, up)
        if last:
            await self.control.wait_applied_async(last)
            self.view.refresh()
        return pb.SetResponse(timestamp=self.view.ts_ns(), response=results,
                              prefix=request.prefix)

    async def Subscribe(  # noqa: N802 - gNMI method name
        self, request_iterator: AsyncIterator[pb.SubscribeRequest], context: Ctx
    ) -> AsyncIterator[pb.SubscribeResponse]:
        await self._authorize(context)
        first = await anext(aiter(request_iterator), None)
        if first is None or not first.HasField("subscribe"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "the first SubscribeRequest must carry a SubscriptionList")
            return
        try:
            plan = SubscriptionPlan(self.model, first.subscribe, self.default_interval_s,
                                    self.view.tick_s)
        except PathError as exc:
            await context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
            return
        mode = first.subscribe.mode
        if mode == pb.SubscriptionList.ONCE:
            for resp in snapshot_responses(plan, self.view):
                self.notifications_sent += 1
                yield resp
            return
        if mode == pb.SubscriptionList.POLL:
            # gNMI 3.5.1.5.3: the target answers each Poll; it sends nothing before the first
            async for req in request_iterator:
                if req.HasField("poll"):
                    for resp in snapshot_responses(plan, self.view):
                        self.notifications_sent += 1
                        yield resp
            return
        async for resp in run_stream(plan, self.view):
            self.notifications_sent += 1
            yield resp

    # ------------------------------------------------------------------ helpers

    async def _authorize(self, context: Ctx) -> None:
        if self.credentials is None:
            return
        md = dict(context.invocation_metadata() or ())
        if (md.get("username"), md.get("password")) != self.credentials:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "bad or missing username/password metadata")

    def _interpret(self, prefix: pb.Path, path: pb.Path, val: pb.TypedValue | None
                   ) -> tuple[int, bool]:
        """A Set operation as (port index, enabled)."""
        joined = gpath.from_pb(prefix) + gpath.from_pb(path)
        full = tuple((n.split(":", 1)[-1], k) for n, k in joined)
        target = prefix.target or path.target
        names = [e[0] for e in full]
        value = _decode(val) if val is not None else None
        if target == "CONFIG_DB" and self.model.sonic is not None:
            if len(names) >= 2 and names[0] == "PORT":
                port = self._port(names[1])
                if len(names) == 3 and names[2] == "admin_status":
                    return port, _admin_word(value)
                if len(names) == 2 and isinstance(value, dict) and "admin_status" in value:
                    return port, _admin_word(value["admin_status"])
            raise PathError("INVALID_ARGUMENT", f"cannot set {gpath.to_text(full)} in CONFIG_DB; "
                                                "supported: PORT/<port>/admin_status")
        if len(full) >= 2 and names[:2] == ["interfaces", "interface"]:
            ifname = dict(full[1][1]).get("name", "")
            port = self._port(ifname)
            rest = names[2:]
            if value is None:   # delete: config/enabled falls back to its default, true
                if rest in (["config", "enabled"], ["config"], []):
                    return port, True
            elif rest == ["config", "enabled"]:
                return port, _bool(value)
            elif rest == ["config"] and isinstance(value, dict):
                return port, _enabled_in(value)
            elif not rest and isinstance(value, dict):
                config = _unqualified(value).get("config")
                if isinstance(config, dict):
                    return port, _enabled_in(config)
        raise PathError("INVALID_ARGUMENT",
                        f"this simulated target only sets interface enable state; "
                        f"{gpath.to_text(full)} is not supported")

    def _port(self, name: str) -> int:
        if name not in self.model.port_of:
            raise PathError("NOT_FOUND", f"{self.model.switch} has no interface {name!r}")
        return self.model.port_of[name]


def _filter_type(sel: LeafSelection, dtype: int, model: SwitchModel,
                 enc: int) -> LeafSelection | None:
    if dtype == pb.GetRequest.ALL:
        return sel
    want = "config" if dtype == pb.GetRequest.CONFIG else "state"
    keep = [i for i, p in enumerate(sel.paths) if any(e[0] == want for e in p)]
    if not keep:
        return None
    idx = sel.sel[keep]
    return LeafSelection(model.table, idx, enc, sel.resp.update.prefix, model.epoch_ns)


def _decode(val: pb.TypedValue) -> Any:
    kind = val.WhichOneof("value")
    if kind in ("json_ietf_val", "json_val"):
        raw = getattr(val, kind)
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace").strip()   # pygnmi sends bare strings unquoted
    if kind is None:
        return None
    if kind == "bytes_val":
        return val.bytes_val.decode(errors="replace")
    return getattr(val, kind)


def _unqualified(d: dict[str, Any]) -> dict[str, Any]:
    return {k.split(":", 1)[-1]: v for k, v in d.items()}


def _enabled_in(config: dict[str, Any]) -> bool:
    c = _unqualified(config)
    unknown = set(c) - _SET_IGNORED - {"enabled"}
    if unknown or "enabled" not in c:
        raise PathError("INVALID_ARGUMENT",
                        f"only config/enabled can be set here (got {sorted(c)})")
    return _bool(c["enabled"])


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise PathError("INVALID_ARGUMENT", f"enabled must be a boolean, got {v!r}")


def _admin_word(v: Any) -> bool:
    if v in ("up", "down"):
        return bool(v == "up")
    raise PathError("INVALID_ARGUMENT", f"admin_status must be 'up' or 'down', got {v!r}")
