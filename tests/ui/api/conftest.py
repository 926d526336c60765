"""Fixtures of the API's tests: one token per role, and a live API (uvicorn on loopback) that
honours them, over the session's faulty fabric, with its commands bus."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import httpx
import pytest

from pipeline.bus.base import Bus, Consumer, Topics
from pipeline.bus.memory import MemoryBus
from tests.ui.conftest import FabricStore, fabric_query
from ui.api.access import AccessSettings, Role, TokenEntry, Tokens, token_hash
from ui.api.app import create_app
from ui.api.commands import CommandPublisher
from ui.api.server import Running, start_background

#: one token per role, held by the identity "<role>-1"
TOKENS: dict[Role, str] = {"viewer": "rwt_viewer-" + "v" * 40,
                           "operator": "rwt_operator-" + "o" * 40,
                           "admin": "rwt_admin-" + "a" * 40}


def identity_of(role: Role) -> str:
    return f"{role}-1"


def entries() -> tuple[TokenEntry, ...]:
    return tuple(TokenEntry(name=identity_of(role), role=role, sha256=token_hash(token))
                 for role, token in TOKENS.items())


def bearer(role: Role | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"} if role else {}


@dataclass
class LiveApi:
    """An API served by uvicorn on a free loopback port, and the bus it publishes commands on."""

    running: Running
    bus: Bus
    topics: Topics
    publisher: CommandPublisher

    @property
    def url(self) -> str:
        return self.running.url

    def http(self, role: Role | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=bearer(role), timeout=30)

    def commands(self) -> Consumer:
        return self.bus.consumer([self.topics.commands], "test")


Serve = Callable[..., LiveApi]


@pytest.fixture
def serve(fabric_store: FabricStore) -> Iterator[Serve]:
    """``serve(read="open"|"token", access=None, ...)``: a live API with the tokens of
    :data:`TOKENS` (or ``access``) publishing commands on ``bus`` (default: an in-process one);
    stopped after the test."""
    started: list[LiveApi] = []

    def start(read: Literal["open", "token"] = "open", access: AccessSettings | None = None,
              bus: Bus | None = None, topics: Topics | None = None,
              max_message_bytes: int | None = None, recheck_s: float = 1.0) -> LiveApi:
        access = access or AccessSettings(read=read, tokens=entries())
        bus = bus or MemoryBus(partitions=1)
        topics = topics or Topics()
        publisher = CommandPublisher(bus, topics, max_message_bytes=max_message_bytes)
        app = create_app(fabric_query(fabric_store), publisher=publisher,
                         tokens=Tokens(access, recheck_s=recheck_s))
        live = LiveApi(start_background(app), bus, topics, publisher)
        started.append(live)
        return live

    yield start
    for live in started:
        live.running.stop()
