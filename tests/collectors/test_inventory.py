"""The targets file: strict validation, defaults, secrets by reference, and the lab's agents."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from collectors.base import load_targets
from collectors.gnmi.collector import GnmiOptions
from collectors.inventory import load_inventory, parse_inventory
from pipeline.errors import ConfigError
from pipeline.inventory import from_lab, resolve_secrets
from rocewatch.cli.targets import targets

GOOD = """
format: 1
defaults:
  sample_interval_s: 5
  credentials: {username_env: GNMI_USER, password_env: GNMI_PASS}
  labels: {pod: pod1}
targets:
  - name: leaf1
    address: 10.0.0.11:9339
    protocol: gnmi
    profile: arista
    labels: {role: leaf, plane: a}
    tls: {ca: pki/ca.pem, cert: pki/c.pem, key: pki/c.key}
  - name: leaf2
    address: "[fd00::12]:161"
    protocol: snmp
    profile: snmp
    sample_interval_s: 30
    snmp: {version: "3", user: rw, auth_key_env: SNMP_AUTH, priv_key_env: SNMP_PRIV}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "targets.yaml"
    path.write_text(text)
    return path


def test_defaults_merge_and_tls_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, GOOD))
    leaf1, leaf2 = inventory.targets
    assert leaf1.sample_interval_s == 5 and leaf2.sample_interval_s == 30
    assert leaf1.labels.pod == "pod1" and leaf1.labels.role == "leaf" and leaf1.labels.plane == "a"
    assert leaf1.credentials.password_env == "GNMI_PASS"
    assert leaf1.tls is not None and leaf1.tls.ca == str(tmp_path / "pki/ca.pem")
    assert (leaf2.host, leaf2.port) == ("fd00::12", 161)
    assert inventory.select("snmp") == (leaf2,)


@pytest.mark.parametrize(("text", "where"), [
    ("targets: [{name: a, address: 'x:1', protocol: gnmi, profile: openconfig, colour: red}]",
     r"targets\[0\]\.colour: unknown key"),
    ("targets: [{name: a, address: 'x:1', protocol: gnmi, profile: nokia}]",
     r"targets\[0\]\.profile: no profile named 'nokia'"),
    ("targets: [{name: a, address: 'x:1', protocol: gnmi, profile: snmp}]",
     r"profile 'snmp' is for snmp"),
    ("targets: [{name: a, address: 'x:1', protocol: snmp, profile: snmp}]",
     r"needs an snmp section"),
    ("targets: [{name: a, address: 'x:1', protocol: snmp, profile: snmp, snmp: {version: '2c'}}]",
     r"community_env"),
    ("targets: [{name: a, address: 'nohostport', protocol: gnmi, profile: openconfig}]",
     r"targets\[0\]\.address"),
    ("defaults: {colour: red}\ntargets: []", r"defaults\.colour: unknown key"),
    ("targets: [{name: a, address: 'x:1', protocol: gnmi, profile: openconfig},"
     " {name: a, address: 'y:1', protocol: gnmi, profile: openconfig}]", r"used twice"),
    ("targets: [{name: a, address: 'x:1', protocol: gnmi, profile: openconfig,"
     " credentials: {password_env: 'hunter2 is my password'}}]", r"password_env"),
])
def test_mistakes_name_their_key_path(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(ConfigError, match=where):
        load_inventory(write(tmp_path, text))


def test_secrets_come_from_the_environment_by_name(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, GOOD))
    leaf1, leaf2 = inventory.targets
    secrets = resolve_secrets(leaf1, {"GNMI_USER": "rw", "GNMI_PASS": "s3cret"})
    assert (secrets.username, secrets.password) == ("rw", "s3cret")
    with pytest.raises(ConfigError, match=r"leaf2: the auth key comes from \$SNMP_AUTH"):
        resolve_secrets(leaf2, {"GNMI_USER": "rw", "GNMI_PASS": "x"})
    assert "s3cret" not in (tmp_path / "targets.yaml").read_text()


AGENTS = {
    "scenario": "t", "epoch_ns": 0, "speed": 10.0, "sample_interval_s": 1, "duration_s": 60,
    "te_controller": "http://127.0.0.1:1",
    "switches": [
        {"name": "spine1", "role": "spine", "snmp": None,
         "gnmi": {"address": "127.0.0.1:5001", "profile": "openconfig", "tls": None,
                  "username": "admin", "password": "admin"}},
        {"name": "leaf1", "role": "leaf", "snmp": None,
         "gnmi": {"address": "127.0.0.1:5002", "profile": "sonic",
                  "tls": {"ca": "/p/ca.pem", "cert": "/p/c.pem", "key": "/p/c.key"},
                  "username": "admin", "password": "admin"}},
        {"name": "leaf2", "role": "leaf", "gnmi": None,
         "snmp": {"address": "127.0.0.1:5003", "version": "2c", "community": "rocewatch",
                  "profile": "snmp"}},
        {"name": "leaf3", "role": "leaf", "gnmi": None,
         "snmp": {"address": "127.0.0.1:5004", "version": "3", "community": "rocewatch",
                  "profile": "snmp", "user": "rocewatch", "auth_protocol": "SHA",
                  "auth_key": "rocewatch-auth", "priv_protocol": "AES",
                  "priv_key": "rocewatch-priv"}},
    ],
}


def test_from_lab_keeps_secrets_out_of_the_inventory() -> None:
    inventory, env = from_lab(AGENTS)
    spine1, leaf1, leaf2, leaf3 = inventory.targets
    assert spine1.clock_rate == 10.0 and spine1.sample_interval_s == 1
    assert spine1.labels.role == "spine" and leaf1.profile == "sonic"
    assert leaf1.tls is not None and leaf1.tls.cert == "/p/c.pem"
    assert leaf2.snmp is not None and leaf2.snmp.version == "2c"
    assert leaf3.snmp is not None and leaf3.snmp.priv_protocol == "aes"
    assert env[spine1.credentials.password_env] == "admin"
    assert env[leaf3.snmp.priv_key_env] == "rocewatch-priv"
    dumped = json.dumps(inventory.model_dump())
    assert "rocewatch-priv" not in dumped and "rocewatch-auth" not in dumped


def test_collector_options_read_an_agents_file(tmp_path: Path) -> None:
    agents = tmp_path / "agents.json"
    agents.write_text(json.dumps(AGENTS))
    chosen, env = load_targets(GnmiOptions(agents=str(agents), shard=""), "gnmi")
    assert [t.name for t in chosen] == ["spine1", "leaf1"]
    assert resolve_secrets(chosen[0], env).password == "admin"
    shards = [load_targets(GnmiOptions(agents=str(agents), shard=f"{i}/2"), "gnmi")[0]
              for i in range(2)]
    assert sorted(t.name for s in shards for t in s) == ["leaf1", "spine1"]


def test_cli_validate_and_from_lab(tmp_path: Path) -> None:
    agents = tmp_path / "agents.json"
    agents.write_text(json.dumps(AGENTS))
    runner = CliRunner()
    out = tmp_path / "lab-targets.yaml"
    env_file = tmp_path / "lab.env"
    result = runner.invoke(targets, ["from-lab", str(agents), "-o", str(out),
                                     "--env-file", str(env_file)])
    assert result.exit_code == 0, result.output
    assert "ROCEWATCH_LAB_GNMI_PASSWORD=admin" in env_file.read_text()
    assert "admin" not in out.read_text().replace("ROCEWATCH_LAB", "")
    loaded = parse_inventory(yaml.safe_load(out.read_text()))
    assert [t.name for t in loaded.targets] == ["spine1", "leaf1", "leaf2", "leaf3"]
    result = runner.invoke(targets, ["validate", str(out)])
    assert isinstance(result.exception, ConfigError)
    assert "leaf1: tls.ca /p/ca.pem is not a file" in str(result.exception)

    plain = copy.deepcopy(AGENTS)
    plain["switches"][1]["gnmi"]["tls"] = None  # type: ignore[index]
    agents.write_text(json.dumps(plain))
    runner.invoke(targets, ["from-lab", str(agents), "-o", str(out)])
    result = runner.invoke(targets, ["validate", str(out), "--require-env"])
    assert isinstance(result.exception, ConfigError) and "not set" in result.output
    env = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    result = runner.invoke(targets, ["validate", str(out), "--require-env"], env=env)
    assert result.exit_code == 0, result.output
    assert "4 targets (2 gnmi, 2 snmp)" in result.output
