"""The API's front gate: every request is checked here before anything reads its body.

In this order, each a cheap look at the request line and headers:

1. the path and method must have a rule (:data:`Need`; a route without one is unreachable: 404),
2. the query string is at most :data:`MAX_QUERY_BYTES` (else 414),
3. the bearer token, if any, must be known (401), and the route's need must be met (401 without a
   token, 403 with too weak a role; :mod:`ui.api.access`),
4. every query parameter must be one the route takes (400: a misspelt ``strat=`` would otherwise
   be ignored and the default range answered as if it had been asked for),
5. a body is taken only by the routes that take one, at most :data:`MAX_BODY_BYTES`: a larger
   ``Content-Length`` is refused before a byte is read, and a chunked body is counted as it
   arrives (413).

A refusal of a request whose body was not read closes the connection (``Connection: close``),
so a client cannot make the server swallow a body nobody asked for: a 100 MB upload without a
token costs the request line, its headers and whatever the socket buffers hold. The identity the
token stands for goes to the handler in ``request.state.identity`` (None without a token).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Set
from typing import Any, Literal
from urllib.parse import parse_qsl

from ui.api.access import ROLES, Identity, Refused, Tokens

#: what a route needs: ``open`` (anyone: the API's documentation), ``probe`` (anyone; the
#: details need read access: ``/healthz``), ``read`` (a viewer token when ``access.read`` is
#: ``token``, else anyone), or a role (that role or above, always)
Need = Literal["open", "probe", "read", "viewer", "operator", "admin"]
#: the largest request body taken (a command is a few kB)
MAX_BODY_BYTES = 1 << 20
#: the longest query string taken (the longest sensible one is a few kB)
MAX_QUERY_BYTES = 16 << 10

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _has_body(scope: Scope) -> bool:
    length = _header(scope, b"content-length")
    return (length is not None and length.strip() not in ("", "0")) or \
        _header(scope, b"transfer-encoding") is not None


async def answer(send: Send, status: int, message: str, close: bool = False,
                 headers: Mapping[str, str] | None = None) -> None:
    """Send ``{"error": message}`` with ``status``; ``close`` ends the connection after it."""
    body = json.dumps({"error": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware enforcing ``rules`` (path → method → :data:`Need`) with ``tokens``;
    ``params`` names the query parameters each path takes (a path not in it is not checked);
    ``counted`` hears the status of every request it refuses."""

    def __init__(self, app: Asgi, tokens: Tokens, rules: Mapping[str, Mapping[str, Need]],
                 params: Mapping[str, Set[str]] | None = None,
                 counted: Callable[[int], None] = lambda status: None,
                 max_body_bytes: int = MAX_BODY_BYTES,
                 max_query_bytes: int = MAX_QUERY_BYTES) -> None:
        self.app = app
        self.tokens = tokens
        self.rules = rules
        self.params = params or {}
        self.counted = counted
        self.max_body_bytes = max_body_bytes
        self.max_query_bytes = max_query_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            scope, receive = await self._admit(scope, receive)
        except Refused as exc:
            self.counted(exc.status)
            headers = {"WWW-Authenticate": 'Bearer realm="rocewatch"'} if exc.status == 401 \
                else {}
            if exc.status == 405:
                headers = {"Allow": ", ".join(self.rules.get(scope["path"], {}))}
            await answer(send, exc.status, str(exc), close=_has_body(scope), headers=headers)
            return
        await self.app(scope, receive, send)

    async def _admit(self, scope: Scope, receive: Receive) -> tuple[Scope, Receive]:
        path: str = scope["path"]
        method: str = scope["method"]
        methods = self.rules.get(path)
        if methods is None:
            raise Refused(404, f"no such path {path[:100]!r}: the API's paths are in /docs")
        need = methods.get(method)
        if need is None:
            raise Refused(405, f"{path} answers {', '.join(methods)}, not {method[:10]}")
        if len(scope.get("query_string", b"")) > self.max_query_bytes:
            raise Refused(414, f"the query string is longer than {self.max_query_bytes} bytes")
        identity: Identity | None = None
        if need != "open":
            identity = self.tokens.identify(_header(scope, b"authorization"))
        what = f"{method} {path}"
        if need in ROLES:
            self.tokens.require(identity, need, what)
        elif need == "read" and self.tokens.read_needs_token:
            self.tokens.require(identity, "viewer", what)
        self._known_params(path, scope.get("query_string", b""))
        scope = {**scope, "state": {**scope.get("state", {}), "identity": identity}}
        if method in ("POST", "PUT", "PATCH"):
            body = await self._body(scope, receive)
            return scope, _replay(body, receive)
        return scope, receive

    def _known_params(self, path: str, query: bytes) -> None:
        takes = self.params.get(path)
        if takes is None or not query:
            return
        for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if name not in takes:
                raise Refused(400, f"{path} takes no parameter {name[:40]!r}; it takes "
                                   f"{', '.join(sorted(takes)) or 'none'}")

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.max_body_bytes
        length = _header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            raise Refused(413, f"the body is {int(length):,} bytes; at most {limit:,} are taken")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise Refused(400, "the client went away before its body arrived")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"the body is longer than {limit:,} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands over the body already read, then the client's later messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
