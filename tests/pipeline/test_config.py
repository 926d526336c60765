"""Strict configuration: unknown keys name their path, env overrides, plugin options."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import apply_env, read_yaml
from pipeline.errors import ConfigError
from rocewatch.settings import check, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rocewatch.yaml"
    path.write_text(text)
    return path


def test_defaults_are_the_embedded_backends() -> None:
    settings = load_settings(None, env={})
    assert settings.bus.kind == "memory"
    assert settings.store.kind == "chdb"


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "store:\n  clickhouse:\n    prot: 9000\n")
    with pytest.raises(ConfigError, match=r"store\.clickhouse\.prot: unknown key") as err:
        load_settings(path, env={})
    assert err.value.path == "store.clickhouse.prot"


def test_bad_value_names_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "bus:\n  kind: rabbit\n")
    with pytest.raises(ConfigError, match=r"bus\.kind"):
        load_settings(path, env={})


def test_env_overrides_file_and_keeps_secrets_out(tmp_path: Path) -> None:
    path = write(tmp_path, "store:\n  kind: clickhouse\n  clickhouse:\n    port: 9000\n")
    env = {"ROCEWATCH_STORE__CLICKHOUSE__PORT": "19000",
           "ROCEWATCH_STORE__CLICKHOUSE__PASSWORD": "s3cret",
           "ROCEWATCH_CONFIG": "ignored: not a key path"}
    settings = load_settings(path, env=env)
    assert settings.store.clickhouse.port == 19000
    assert settings.store.clickhouse.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


def test_env_override_of_unknown_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        load_settings(None, env={"ROCEWATCH_STORE__NOPE": "1"})


def test_env_list_items_by_index() -> None:
    data = {"collectors": [{"type": "gnmi", "name": "a"}]}
    apply_env(data, {"ROCEWATCH_COLLECTORS__0__NAME": "fabric"})
    assert data["collectors"][0]["name"] == "fabric"
    with pytest.raises(ConfigError, match="no list item"):
        apply_env(data, {"ROCEWATCH_COLLECTORS__3__NAME": "x"})


def test_yaml_errors_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_yaml(write(tmp_path, "bus: [unclosed\n"))
    with pytest.raises(ConfigError, match="mapping at the top"):
        read_yaml(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        read_yaml(tmp_path / "missing.yaml")


def test_unknown_plugin_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "collectors:\n  - {type: netconf, name: x}\n")
    with pytest.raises(Exception, match="netconf"):
        check(load_settings(path, env={}))


def test_embedded_store_keeps_ingest_and_api_together() -> None:
    settings = load_settings(None, env={}, overrides={"remediation": {"receivers": []}})
    with pytest.raises(ConfigError, match="one process"):
        check(settings, ("ingest",))
    check(settings, ("ingest", "api"))
