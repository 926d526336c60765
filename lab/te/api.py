"""The TE controller's HTTP API (FastAPI), served by uvicorn on the agents' event loop.

The contract is ``docs/te-controller.md``; this module only maps HTTP onto
:class:`~lab.te.controller.TeController`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from lab.te.controller import TeController, TeError


class DrainRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reason: str = Field(min_length=1, max_length=1000)
    requested_by: str = Field(min_length=1, max_length=200)
    evidence: Any = None


def make_app(te: TeController) -> FastAPI:
    app = FastAPI(title="rocewatch lab TE controller", version="1",
                  description="See docs/te-controller.md")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/state")
    async def state(links: Literal["all", "drained"] = "all") -> dict[str, Any]:
        return te.state(drained_only=links == "drained")

    @app.get("/v1/links/{link_id}")
    async def link(link_id: str) -> Any:
        try:
            return te.link_doc(te._link(link_id))
        except TeError as exc:
            return JSONResponse(exc.body, status_code=exc.status)

    @app.post("/v1/links/{link_id}/drain")
    async def drain(link_id: str, body: DrainRequest) -> Any:
        try:
            return await te.drain(link_id, body.reason, body.requested_by, body.evidence)
        except TeError as exc:
            return JSONResponse(exc.body, status_code=exc.status)

    @app.post("/v1/links/{link_id}/undrain")
    async def undrain(link_id: str, body: DrainRequest) -> Any:
        try:
            return await te.undrain(link_id, body.reason, body.requested_by, body.evidence)
        except TeError as exc:
            return JSONResponse(exc.body, status_code=exc.status)

    return app


class TeServer:
    """uvicorn on the running loop; ``start`` returns the bound port."""

    def __init__(self, te: TeController, host: str, port: int) -> None:
        config = uvicorn.Config(make_app(te), host=host, port=port, log_level="warning",
                                lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> int:
        self._task = asyncio.ensure_future(self.server.serve())
        while not self.server.started:
            if self._task.done():
                self._task.result()   # raises why it could not start
            await asyncio.sleep(0.01)
        sock = self.server.servers[0].sockets[0]
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        self.server.should_exit = True
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
