"""The dashboard asks for an API token once per session, offers only what its role may do, and
gives commands as the token's identity (never a typed name), against a live API that requires a
token to read."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from streamlit.testing.v1 import AppTest

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.wire.commands import decode_command
from tests.ui.api.conftest import TOKENS, entries, identity_of
from tests.ui.conftest import FabricStore, fabric_query
from tests.ui.dashboard.test_dashboard import DASHBOARD
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.access import AccessSettings, Tokens
from ui.api.app import create_app
from ui.api.commands import CommandPublisher
from ui.api.server import Running, start_background


@dataclass
class Gated:
    running: Running
    bus: MemoryBus
    topics: Topics


@pytest.fixture
def gated(fabric_store: FabricStore) -> Iterator[Gated]:
    """The API over the faulty fabric with one token per role; reads need a token too."""
    bus, topics = MemoryBus(partitions=1), Topics()
    app = create_app(fabric_query(fabric_store), publisher=CommandPublisher(bus, topics),
                     tokens=Tokens(AccessSettings(read="token", tokens=entries())))
    running = start_background(app)
    yield Gated(running, bus, topics)
    running.stop()


def run(monkeypatch: pytest.MonkeyPatch, url: str) -> AppTest:
    monkeypatch.setattr(sys, "argv", [DASHBOARD, "--api", url])
    monkeypatch.delenv("ROCEWATCH_API__TOKEN", raising=False)
    at = AppTest.from_file(DASHBOARD, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def sign_in(at: AppTest, token: str) -> None:
    at.text_input(key="token_entry").input(token)
    [button] = [b for b in at.button if b.label == "Sign in"]
    button.click().run()
    assert not at.exception, at.exception


def test_no_token_no_reads_then_a_viewer_reads_but_gives_no_command(
        monkeypatch: pytest.MonkeyPatch, gated: Gated) -> None:
    at = run(monkeypatch, gated.running.url)
    assert any("wants a token to read" in w.value for w in at.warning)
    assert not at.metric  # nothing read
    sign_in(at, TOKENS["viewer"])
    assert any(f"Signed in as **{identity_of('viewer')}** (viewer)".replace("-", "\\-") in m.value
               for m in at.sidebar.markdown)
    assert {m.label for m in at.metric} >= {"Links not ok", "Incidents"}
    assert any("operator's token" in c.value for c in at.caption)  # no command form
    assert not [s for s in at.selectbox if (s.key or "").startswith("cmd-kind-")]
    at.run()  # the session keeps its token: no new prompt
    assert not [t for t in at.text_input if t.key == "token_entry"]


def test_an_operator_commands_as_its_identity(monkeypatch: pytest.MonkeyPatch,
                                              gated: Gated) -> None:
    consumer = gated.bus.consumer([gated.topics.commands], "test")
    at = run(monkeypatch, gated.running.url)
    sign_in(at, "rwt_not-a-token-" + "x" * 30)
    assert any("Token refused" in e.value for e in at.error)
    [again] = [b for b in at.button if b.label == "Try another token"]
    again.click().run()
    sign_in(at, TOKENS["operator"])
    [kind] = [s for s in at.selectbox if (s.key or "").startswith("cmd-kind-")]
    # an operator's commands on a link (resuming automation is an admin's)
    assert kind.options == ["Approve the pending drain", "Reject the pending drain",
                            "Drain the link for maintenance", "Record a repair (enable and soak)",
                            "Silence its notifications for 2 h"]
    fp = kind.key.removeprefix("cmd-kind-")  # type: ignore[union-attr]
    kind.set_value("approve")
    at.text_input(key=f"cmd-comment-{fp}").input("optics checked")
    [send] = [b for b in at.button if b.label == "Send"]
    send.click().run()
    assert any("Sent approve as operator-1" in s.value for s in at.success), \
        [e.value for e in at.error]
    [msg] = consumer.poll(5.0)
    command = decode_command(msg.value)
    assert (command.kind, command.by, command.target, command.comment) == (
        "approve", identity_of("operator"), FAULTY_LINK, "optics checked")
    [out] = [b for b in at.button if b.label == "Sign out"]
    out.click().run()
    assert [t for t in at.text_input if t.key == "token_entry"]
