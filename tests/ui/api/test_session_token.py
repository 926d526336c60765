"""``rocewatch up`` mints an admin token for its own dashboard when the config names none, and
leaves a config that names tokens alone."""

from __future__ import annotations

from rocewatch.settings import Settings
from rocewatch.up import SESSION_IDENTITY, with_session_token
from tests.ui.api.conftest import Serve


def test_a_config_without_tokens_gets_a_session_admin_the_api_honours(serve: Serve) -> None:
    settings, signed_in = with_session_token(Settings())
    assert signed_in == SESSION_IDENTITY
    token = settings.api.token.get_secret_value()
    assert token.startswith("rwt_")
    assert [(e.name, e.role) for e in settings.access.tokens] == [(SESSION_IDENTITY, "admin")]
    assert token not in settings.model_dump_json()  # only the hash is in the access section
    live = serve(access=settings.access)
    with live.http() as http:
        who = http.get("/v1/identity", headers={"Authorization": f"Bearer {token}"})
        assert who.status_code == 200, who.text
        assert (who.json()["name"], who.json()["role"]) == (SESSION_IDENTITY, "admin")
        wrong = http.get("/v1/identity", headers={"Authorization": "Bearer rwt_x"})
        assert wrong.status_code == 401
    # each run mints its own
    again, _ = with_session_token(Settings())
    assert again.api.token.get_secret_value() != token


def test_a_config_that_names_tokens_is_left_alone() -> None:
    named = Settings.model_validate(
        {"access": {"tokens": [{"name": "ops-1", "role": "operator", "sha256": "a" * 64}]}})
    settings, signed_in = with_session_token(named)
    assert signed_in == "" and settings is named
    assert [e.name for e in settings.access.tokens] == ["ops-1"]
