"""Identities and roles against the live API: every caller (no token, an unknown one, each role)
against every route of the app, with reads open and with reads needing a token; the actor of a
command is its token's identity; tokens from a file are re-read (a revoked token stops working);
``check-config`` and ``rocewatch token mint`` do what the docs say."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

import pytest
import yaml
from click.testing import CliRunner
from fastapi.routing import APIRoute

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.errors import AccessDenied, ConfigError
from pipeline.wire.commands import Command, decode_command
from rocewatch.cli.main import cli
from rocewatch.settings import check, load_settings
from tests.ui.api.conftest import TOKENS, Serve, bearer, identity_of
from tests.ui.conftest import FabricStore, fabric_query
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.access import COMMAND_ROLES, ROLES, AccessSettings, Role, Tokens, token_hash
from ui.api.app import create_app
from ui.api.client import ApiClient
from ui.api.commands import CommandPublisher
from ui.api.server import start_background

Caller = Literal["none", "unknown", "viewer", "operator", "admin"]
CALLERS: tuple[Caller, ...] = ("none", "unknown", "viewer", "operator", "admin")

#: every route of the app and who may use it, written here independently of the app: a route the
#: app gains without a line here fails test_every_route_has_a_rule
#: (need: "open" anyone, "probe" anyone, "read" viewer when reads need a token, else a role)
EXPECTED: dict[tuple[str, str], str] = {
    **{(method, path): "open" for method in ("GET", "HEAD")
       for path in ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")},
    ("GET", "/healthz"): "probe",
    ("GET", "/v1/identity"): "viewer",
    ("GET", "/v1/clock"): "read",
    ("GET", "/v1/series"): "read",
    ("GET", "/v1/latest"): "read",
    ("GET", "/v1/alerts"): "read",
    ("GET", "/v1/incidents"): "read",
    ("GET", "/v1/actions"): "read",
    ("GET", "/v1/status"): "read",
    ("GET", "/v1/topology"): "read",
    ("GET", "/v1/fabric"): "read",
    ("GET", "/v1/heatmap"): "read",
    ("POST", "/v1/commands"): "operator",
}
#: a valid request of each route
PARAMS: dict[str, dict[str, Any]] = {
    "/v1/series": {"device": "leaf3", "port": "Ethernet1", "metric": "if_in_fcs_errors"},
    "/v1/latest": {"device": "leaf3"},
}
#: a valid body of each command kind, and the role it needs (independently of the app)
COMMANDS: dict[str, tuple[dict[str, Any], Role]] = {
    "approve": ({"target": FAULTY_LINK, "comment": "optics checked"}, "operator"),
    "reject": ({"target": FAULTY_LINK}, "operator"),
    "repair": ({"target": FAULTY_LINK, "action": "replaced the optic"}, "operator"),
    "drain": ({"target": FAULTY_LINK, "comment": "maintenance"}, "operator"),
    "silence": ({"matchers": ["alertname=faulty_link"], "ends_ns": 2 * 10**18}, "operator"),
    "expire_silence": ({"silence_id": "0123456789abcdef"}, "operator"),
    "resume": ({"comment": "all clear"}, "admin"),
}


def headers(caller: Caller) -> dict[str, str]:
    if caller == "none":
        return {}
    if caller == "unknown":
        return {"Authorization": "Bearer rwt_" + "x" * 43}
    return bearer(caller)


def allowed(need: str, caller: Caller, reads_need_token: bool) -> int:
    """The status a caller gets: 200 (or 202), 401 or 403."""
    if need == "open":
        return 200
    if caller == "unknown":
        return 401
    if need == "probe":
        return 200
    if need == "read" and not reads_need_token:
        return 200
    role: Role = "viewer" if need == "read" else need  # type: ignore[assignment]
    if caller == "none":
        return 401
    return 200 if ROLES.index(caller) >= ROLES.index(role) else 403


def routes(fabric_store: FabricStore) -> set[tuple[str, str]]:
    app = create_app(fabric_query(fabric_store),
                     publisher=CommandPublisher(MemoryBus(), Topics()))
    out = set()
    for route in app.routes:
        for method in getattr(route, "methods", None) or ():
            out.add((method, getattr(route, "path", "")))
    assert any(isinstance(r, APIRoute) for r in app.routes)
    return out


def test_every_route_has_a_rule(fabric_store: FabricStore) -> None:
    assert routes(fabric_store) == set(EXPECTED), (
        "a route was added or removed: say who may use it in EXPECTED (and in the app)")


#: the command kinds of the wire format
KINDS = sorted(m.model_fields["kind"].default for m in get_args(get_args(Command)[0]))


def test_every_command_kind_has_a_role() -> None:
    assert set(KINDS) <= set(COMMAND_ROLES)
    assert set(KINDS) <= set(COMMANDS), "say here which role a new command kind needs"


@pytest.mark.parametrize("read", ["open", "token"])
def test_every_caller_against_every_route(serve: Serve, fabric_store: FabricStore,
                                          read: Literal["open", "token"]) -> None:
    live = serve(read=read)
    seen: dict[tuple[Caller, str, str], int] = {}
    for method, path in sorted(routes(fabric_store)):
        for caller in CALLERS:
            with live.http() as http:
                if method == "POST":
                    kind, (body, _) = "resume", COMMANDS["resume"]
                    resp = http.post(path, json={"kind": kind, **body}, headers=headers(caller))
                else:
                    resp = http.request(method, path, params=PARAMS.get(path),
                                        headers=headers(caller))
            want = allowed(EXPECTED[(method, path)], caller, read == "token")
            got = resp.status_code
            if method == "POST" and want == 200:
                want = 202 if caller == "admin" else 403  # resume needs admin
            seen[(caller, method, path)] = got
            assert got == want, (caller, method, path, resp.text)
            if got in (401, 403) and method != "HEAD":
                assert "error" in resp.json()
            if got == 401:
                assert resp.headers["www-authenticate"].startswith("Bearer")
    assert len(seen) == len(EXPECTED) * len(CALLERS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_role_against_every_command(serve: Serve, kind: str) -> None:
    live = serve()
    consumer = live.commands()
    body, need = COMMANDS[kind]
    for role in ROLES:
        with live.http(role) as http:
            resp = http.post("/v1/commands", json={"kind": kind, **body})
        if ROLES.index(role) >= ROLES.index(need):
            assert resp.status_code == 202, (role, resp.text)
            assert resp.json()["by"] == identity_of(role)
            [msg] = consumer.poll(2.0)
            command = decode_command(msg.value)
            assert (command.kind, command.by) == (kind, identity_of(role))
        else:
            assert resp.status_code == 403, (role, resp.text)
            assert f"needs role {'operator' if role == 'viewer' else need}" in resp.json()["error"]
            assert consumer.poll(0.1) == []


def test_the_actor_is_the_tokens_identity_never_a_typed_name(serve: Serve) -> None:
    live = serve()
    consumer = live.commands()
    with live.http("operator") as http:
        typed = http.post("/v1/commands", json={"kind": "approve", "target": FAULTY_LINK,
                                                "by": "somebody-else"})
        assert typed.status_code == 422
        assert "by: not taken" in typed.json()["error"]
        assert consumer.poll(0.2) == []
        ok = http.post("/v1/commands", json={"kind": "approve", "target": FAULTY_LINK})
    assert ok.status_code == 202, ok.text
    [msg] = consumer.poll(2.0)
    assert decode_command(msg.value).by == "operator-1"


def test_without_tokens_nobody_gives_commands(serve: Serve) -> None:
    live = serve(access=AccessSettings())
    consumer = live.commands()
    with live.http() as http:
        resp = http.post("/v1/commands", json={"kind": "resume"})
        assert http.get("/v1/clock").status_code == 200  # reads stay open
    assert resp.status_code == 401
    assert "rocewatch token mint" in resp.json()["error"]
    assert consumer.poll(0.2) == []


def test_a_probe_without_a_token_hears_only_the_status(serve: Serve) -> None:
    live = serve(read="token")
    with live.http() as http:
        bare = http.get("/healthz")
    with live.http("viewer") as http:
        full = http.get("/healthz")
    assert bare.json() == {"status": full.json()["status"]}
    assert bare.status_code == full.status_code
    assert "loops" in full.json() and full.json()["loops"]["api"]["tokens"] == 3


def test_the_client_names_its_identity_and_raises_access_denied(serve: Serve) -> None:
    live = serve(read="token")
    with ApiClient(live.url, token=TOKENS["operator"]) as client:
        who = client.identity()
        assert (who.name, who.role) == ("operator-1", "operator")
        assert "approve" in who.may and "resume" not in who.may
        assert client.command({"kind": "repair", "target": FAULTY_LINK,
                               "action": "cleaned"})["by"] == "operator-1"
        with pytest.raises(AccessDenied) as refused:
            client.command({"kind": "resume"})
        assert refused.value.status == 403
    with ApiClient(live.url) as client, pytest.raises(AccessDenied) as refused:
        client.alerts()
    assert refused.value.status == 401
    with ApiClient(live.url, token="rwt_wrong") as client, pytest.raises(AccessDenied):
        client.identity()


def write_tokens(path: Path, roles: dict[str, Role]) -> None:
    path.write_text(yaml.safe_dump({"tokens": [
        {"name": identity_of(role) if name in TOKENS else name, "role": role,
         "sha256": token_hash(TOKENS[name]) if name in TOKENS else token_hash(name)}
        for name, role in roles.items()]}))


def test_a_tokens_file_is_reread_and_a_revoked_token_stops_working(
        serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    write_tokens(path, {"operator": "operator", "viewer": "viewer"})
    live = serve(access=AccessSettings(read="token", tokens_file=str(path)), recheck_s=0.0)
    with live.http("operator") as http:
        assert http.get("/v1/identity").json()["name"] == "operator-1"
    write_tokens(path, {"viewer": "viewer"})  # operator revoked
    with live.http("operator") as http:
        assert http.get("/v1/identity").status_code == 401
    with live.http("viewer") as http:
        assert http.get("/v1/clock").status_code == 200
    path.write_text("tokens: [{name: viewer-1, role: viewer, sha256: not-a-hash}]\n")
    with live.http("viewer") as http:
        assert http.get("/v1/clock").status_code == 401  # a broken file honours none
    with live.http("admin") as http:
        assert http.get("/v1/clock").status_code == 401
    write_tokens(path, {"viewer": "viewer"})
    with live.http("viewer") as http:
        assert http.get("/v1/clock").status_code == 200
        assert http.get("/healthz").json()["loops"]["api"]["tokens_error"] == ""


def config(tmp_path: Path, access: dict[str, Any]) -> Path:
    path = tmp_path / "rocewatch.yaml"
    path.write_text(yaml.safe_dump({"access": access}))
    return path


GOOD = {"name": "alice", "role": "operator", "sha256": "a" * 64}


@pytest.mark.parametrize(("access", "message"), [
    ({"tokens": [{**GOOD, "sha256": "A" * 64}]}, "access.tokens[0].sha256"),
    ({"tokens": [{**GOOD, "role": "root"}]}, "access.tokens[0].role"),
    ({"tokens": [{**GOOD, "name": "alice\n"}]}, "access.tokens[0].name"),
    ({"tokens": [{**GOOD, "name": "bob smith"}]}, "access.tokens[0].name"),
    ({"tokens": [GOOD, {**GOOD, "sha256": "b" * 64}]}, "has two tokens"),
    ({"tokens": [GOOD, {**GOOD, "name": "bob"}]}, "the same token is listed twice"),
    ({"tokens": [{**GOOD, "token": "rwt_plain"}]}, "unknown key"),
    ({"read": "token"}, "no token is configured"),
    ({"read": "everyone"}, "access.read"),
    ({"tokens_file": "/nonexistent/tokens.yaml"}, "access.tokens_file"),
])
def test_check_config_refuses_bad_access(tmp_path: Path, access: dict[str, Any],
                                         message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check(load_settings(config(tmp_path, access), env={}))
    assert message in str(refused.value)


def test_check_config_reads_the_tokens_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {name: bob, role: admin, sha256: " + "c" * 64 + "}\n")
    path = config(tmp_path, {"read": "token", "tokens": [GOOD], "tokens_file": str(tokens)})
    result = CliRunner().invoke(cli, ["check-config", "-c", str(path)])
    assert result.exit_code == 0, result.output
    assert "access: reads token, 0 viewers, 1 operator, 1 admin" in result.output
    tokens.write_text("tokens:\n  - {name: alice, role: admin, sha256: " + "c" * 64 + "}\n")
    with pytest.raises(ConfigError, match="has two tokens"):
        check(load_settings(path, env={}))


def test_a_minted_token_works_once_its_line_is_in_the_config(
        fabric_store: FabricStore, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["token", "mint", "carol", "--role", "operator"])
    assert result.exit_code == 0, result.output
    lines = [ln.strip() for ln in result.output.splitlines()]
    token = next(ln for ln in lines if ln.startswith("rwt_"))
    entry = next(ln for ln in lines if ln.startswith("- {name: carol"))
    assert token not in entry and token_hash(token) in entry
    path = tmp_path / "rocewatch.yaml"
    path.write_text(f"access:\n  tokens:\n    {entry}\n")
    settings = load_settings(path, env={"ROCEWATCH_API__TOKEN": token})
    check(settings)
    running = start_background(create_app(fabric_query(fabric_store),
                                          tokens=Tokens(settings.access)))
    try:
        # the client of the one loader sends api.token (ROCEWATCH_API__TOKEN)
        with ApiClient.from_settings(settings.api, settings.dashboard, url=running.url) as c:
            assert c.identity().name == "carol"
    finally:
        running.stop()
    bad = CliRunner().invoke(cli, ["token", "mint", "carol\n"])
    assert bad.exit_code != 0 and "not a valid identity name" in str(bad.exception)
