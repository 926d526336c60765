"""The deployment files: Docker cannot run here, so their structure is checked, and every role
config the compose file hands a container must pass ``check-config`` for that role."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from collectors.inventory import load_inventory
from rocewatch.app import ROLES
from rocewatch.settings import check
from tests.docker.compose_files import (
    DOCKER,
    REPO,
    container_settings,
    load_compose,
    role_services,
)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose("compose.yaml")


def test_the_engines_are_there_with_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:4.")
    assert services["clickhouse"]["image"].startswith("clickhouse/clickhouse-server:")
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    for engine in ("kafka", "clickhouse"):
        assert services[engine]["healthcheck"]["test"]


def test_every_role_runs_in_a_container_of_its_own(compose: dict[str, Any]) -> None:
    roles = [role for role, _ in role_services(compose).values()]
    assert sorted(roles) == sorted(ROLES)
    ingest = next(svc for role, svc in role_services(compose).values() if role == "ingest")
    assert ingest["deploy"]["replicas"] >= 2, "ingest consumers share the partitions"
    for _, svc in role_services(compose).values():
        assert svc["depends_on"]["kafka"]["condition"] == "service_healthy"
        assert svc["build"]["dockerfile"] == "docker/Dockerfile"


def test_published_ports_bind_loopback_only(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port}"


@pytest.mark.parametrize("service", ["collect", "ingest", "detect", "remediate", "api"])
def test_each_role_config_passes_check_config(compose: dict[str, Any], service: str,
                                              tmp_path: Path) -> None:
    role, svc = role_services(compose)[service]
    settings = container_settings(svc, tmp_path)
    check(settings, (role,))
    # separate processes need the shared engines, not the embedded ones
    assert settings.bus.kind == "kafka" and settings.store.kind == "clickhouse"
    for spec in settings.collectors:
        targets = spec.options.get("targets")
        if targets:
            assert load_inventory(targets).targets


def test_the_image_holds_every_package(compose: dict[str, Any]) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]
                ["include"]]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text()
    for package in packages:
        assert f"COPY {package} ./{package}" in dockerfile, package
        assert f"!{package}/**" in ignore, package
    assert 'ENTRYPOINT ["rocewatch"' in dockerfile and "USER rocewatch" in dockerfile
