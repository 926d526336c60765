"""The one HTTP client built from settings: against a live API that honours tokens, it asks the
configured address and sends the configured token (``api.token``); the dashboard's command line
carries both to the dashboard process (the token in its environment, never on the command line)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.bus.base import Bus, Topics
from pipeline.config import ApiSettings, DashboardSettings
from pipeline.errors import AccessDenied, ConfigError, StoreError
from pipeline.wire.commands import decode_command
from rocewatch.app import open_bus
from rocewatch.settings import Settings, load_settings
from tests.ui.api.conftest import TOKENS, entries
from tests.ui.conftest import FabricStore, fabric_query
from ui.api.access import AccessSettings, Tokens
from ui.api.app import create_app
from ui.api.client import ApiClient, api_url
from ui.api.commands import CommandPublisher
from ui.api.server import Running, start_background
from ui.dashboard.launch import TOKEN_ENV, DashboardOptions, command, environment, parse

TOKEN = TOKENS["admin"]
RESUME = {"kind": "resume"}


@pytest.fixture
def guarded_api(fabric_store: FabricStore) -> Iterator[tuple[Running, Bus]]:
    """An API that honours the test tokens (TOKEN is an admin's), over the faulty fabric, and its
    commands bus."""
    bus = open_bus(Settings())  # the in-process bus, as the front door opens it
    app = create_app(fabric_query(fabric_store), publisher=CommandPublisher(bus, Topics()),
                     tokens=Tokens(AccessSettings(tokens=entries())))
    running = start_background(app)
    yield running, bus
    running.stop()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def write_config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "rocewatch.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("shape", ["api address", "wildcard host", "dashboard.api_url"])
def test_a_client_from_the_one_loader_reaches_the_api_with_the_token(
        guarded_api: tuple[Running, Bus], tmp_path: Path, shape: str) -> None:
    running, bus = guarded_api
    port = port_of(running.url)
    data = {
        "api address": {"api": {"host": "127.0.0.1", "port": port}},
        "wildcard host": {"api": {"host": "0.0.0.0", "port": port}},
        # a dashboard.api_url wins over the address the API role would listen on
        "dashboard.api_url": {"api": {"port": 1}, "dashboard": {"api_url": running.url}},
    }[shape]
    config = write_config(tmp_path, data)
    settings = load_settings(config, env={TOKEN_ENV: TOKEN})
    commands = bus.consumer([Topics().commands], "test")
    with ApiClient.from_settings(settings.api, settings.dashboard) as client:
        assert client.base_url == running.url
        assert client.health().status in ("ok", "degraded")
        assert client.command(RESUME)["by"] == "admin-1"
    [msg] = commands.poll(1.0)
    assert decode_command(msg.value).kind == "resume"
    # the same config without the token: the API refuses the command, and nothing is published
    tokenless = load_settings(config, env={})
    with ApiClient.from_settings(tokenless.api, tokenless.dashboard) as client, \
            pytest.raises(AccessDenied, match="needs Authorization: Bearer"):
        client.command(RESUME)
    assert not commands.poll(0.2)


def test_an_explicit_url_beats_the_configuration(guarded_api: tuple[Running, Bus]) -> None:
    running, _ = guarded_api
    api = ApiSettings(port=1, token=TOKEN)
    with ApiClient.from_settings(api, DashboardSettings()) as client, \
            pytest.raises(StoreError, match=re.escape("127.0.0.1:1 did not answer")):
        client.clock()
    with ApiClient.from_settings(api, DashboardSettings(), url=running.url) as client:
        assert client.clock().now_ns > 0
        assert client.command(RESUME)["accepted"] is True


def test_ipv6_hosts_are_bracketed() -> None:
    assert api_url(ApiSettings(host="::1", port=9), DashboardSettings()) == "http://[::1]:9"
    assert api_url(ApiSettings(host="::", port=9), DashboardSettings()) == "http://127.0.0.1:9"


def test_the_dashboard_is_told_the_url_and_token_by_whoever_starts_it(
        guarded_api: tuple[Running, Bus]) -> None:
    running, _ = guarded_api
    api = ApiSettings(host="127.0.0.1", port=port_of(running.url), token=TOKEN)
    told = DashboardOptions.from_settings(api, DashboardSettings(refresh_s=5.0))
    argv = command(told, "127.0.0.1", 8501)
    env = environment(told, {"PATH": "/bin", TOKEN_ENV: "stale"})
    assert TOKEN not in " ".join(argv), "a secret on a command line is readable by everyone"
    assert env == {"PATH": "/bin", TOKEN_ENV: TOKEN}
    # what the script reads back is what it was told: streamlit hands it the words after "--"
    heard = parse(argv[argv.index("--") + 1:], env)
    assert heard == told == DashboardOptions(running.url, 5.0, TOKEN)
    with ApiClient(heard.api_url, token=heard.token) as client:
        assert client.command(RESUME)["accepted"] is True


@pytest.mark.parametrize(("argv", "message"), [
    (["--refresh", "soon"], "wants seconds"),
    (["--refresh", "0"], "must be positive"),
    (["--api"], "needs a value"),
])
def test_a_bad_dashboard_command_line_is_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(argv, {})


def test_no_options_mean_the_default_api() -> None:
    assert parse(["--api=http://10.0.0.1:80"], {}).api_url == "http://10.0.0.1:80"
    assert parse([], {}) == DashboardOptions(api_url(ApiSettings(), DashboardSettings()),
                                             DashboardSettings().refresh_s, "")
