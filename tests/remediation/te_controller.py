"""A TE controller on loopback that keeps the contract of ``docs/te-controller.md`` (drain,
undrain, GET a link, GET the state listing every link whatever the query asks, 404 for unknown
links, 409 when a drain would isolate a switch, 422 for a bad
body), for the runbook tests; it records every request, and answers the next ones from
``script`` (a status and its headers: a busy or rate-limiting controller) while that lasts."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from pipeline.topology.model import Topology


@dataclass
class TeController:
    topology: Topology
    drained: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    #: links whose drain is refused with 409
    refuse: set[str] = field(default_factory=set)
    #: the next requests' answers (status, headers), before any other handling
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    url: str = ""
    _server: ThreadingHTTPServer | None = None

    def start(self) -> TeController:
        te = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None,
                       ) -> None:
                out = json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _scripted(self) -> bool:
                if not te.script:
                    return False
                status, headers = te.script.pop(0)
                self._reply(status, {"error": "scripted"}, headers)
                return True

            def do_GET(self) -> None:
                te.requests.append(("GET", self.path, None))
                if self._scripted():
                    return None
                if self.path.split("?")[0] == "/v1/state":  # every link, whatever is asked
                    return self._reply(200, {"drained": sorted(te.drained), "links": [
                        te.link(ln.id) for ln in te.topology.links]})
                parts = self.path.split("/")
                link = unquote(parts[3]) if len(parts) == 4 and parts[2] == "links" else ""
                if link not in te.topology.link_by_id:
                    return self._reply(404, {"error": "unknown link", "link_id": link})
                return self._reply(200, te.link(link))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"null")
                te.requests.append(("POST", self.path, body))
                if self._scripted():
                    return None
                parts = self.path.split("/")
                if len(parts) != 5 or parts[2] != "links" or parts[4] not in ("drain", "undrain"):
                    return self._reply(404, {"error": "no such endpoint"})
                link, verb = unquote(parts[3]), parts[4]
                if link not in te.topology.link_by_id:
                    return self._reply(404, {"error": "unknown link", "link_id": link})
                if not isinstance(body, dict) or not body.get("reason") or not body.get(
                        "requested_by"):
                    return self._reply(422, {"detail": "reason and requested_by are required"})
                if verb == "drain" and link in te.refuse:
                    leaf = link.split("~")[0]
                    return self._reply(409, {"error": f"would isolate {leaf}", "link_id": link})
                changed = (link not in te.drained) if verb == "drain" else (link in te.drained)
                (te.drained.add if verb == "drain" else te.drained.discard)(link)
                return self._reply(200, {"link_id": link, "drained": verb == "drain",
                                         "changed": changed, "paths_version": len(te.requests),
                                         "link": te.link(link)})

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def link(self, link_id: str) -> dict[str, Any]:
        ln = self.topology.link_by_id[link_id]
        return {"id": ln.id, "a": str(ln.a), "b": str(ln.b), "gbps": ln.gbps, "oper": "up",
                "drained": link_id in self.drained}

    def calls(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _ in self.requests]

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
