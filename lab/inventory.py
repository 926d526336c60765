"""Which agent each switch runs (gNMI or SNMP), in which dialect, and the ``agents.json`` they make.

Assignment is deterministic and spreads evenly: walking the switches in topology order
(aggregation switches, spines, then leaves), switch ``i`` speaks SNMP when
``floor((i + 1) * snmp) > floor(i * snmp)``, so half SNMP alternates switch by switch. gNMI
switches take the scenario's ``profiles`` round-robin in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lab.scenario.spec import Scenario

SNMP_PROFILE = "snmp"


@dataclass(frozen=True)
class AgentPlan:
    switch: str
    role: str          # "agg" | "spine" | "leaf"
    protocol: str      # "gnmi" | "snmp"
    profile: str       # a gNMI dialect, or "snmp"


def plan_agents(scenario: Scenario) -> list[AgentPlan]:
    topo = scenario.topology()
    share = scenario.fabric.agents.snmp
    profiles = scenario.fabric.profiles
    out: list[AgentPlan] = []
    g = 0
    for i, sw in enumerate(topo.switches):
        role = topo.role(sw) or "leaf"
        if math.floor((i + 1) * share + 1e-9) > math.floor(i * share + 1e-9):
            out.append(AgentPlan(sw, role, "snmp", SNMP_PROFILE))
        else:
            out.append(AgentPlan(sw, role, "gnmi", profiles[g % len(profiles)]))
            g += 1
    return out


@dataclass(frozen=True)
class Credentials:
    username: str = "admin"
    password: str = "admin"
    community: str = "rocewatch"
    snmp_version: str = "2c"              # what agents.json tells collectors to use
    v3_user: str = "rocewatch"
    v3_auth_protocol: str = "SHA"         # HMAC-SHA-96 (usmHMACSHAAuthProtocol)
    v3_auth_key: str = "rocewatch-auth"
    v3_priv_protocol: str = "AES"         # CFB128-AES-128 (usmAesCfb128Protocol)
    v3_priv_key: str = "rocewatch-priv"


def agents_document(scenario: Scenario, epoch_ns: int, speed: float, te_url: str,
                    plans: list[AgentPlan], addresses: dict[str, str],
                    creds: Credentials, tls: dict[str, str] | None) -> dict[str, Any]:
    """The ``agents.json`` inventory (format documented in docs/lab.md)."""
    switches = []
    for plan in plans:
        entry: dict[str, Any] = {"name": plan.switch, "role": plan.role, "gnmi": None,
                                 "snmp": None}
        if plan.protocol == "gnmi":
            entry["gnmi"] = {"address": addresses[plan.switch], "profile": plan.profile,
                             "tls": dict(tls) if tls else None, "username": creds.username,
                             "password": creds.password}
        else:
            snmp: dict[str, Any] = {"address": addresses[plan.switch],
                                    "version": creds.snmp_version,
                                    "community": creds.community, "profile": SNMP_PROFILE}
            if creds.snmp_version == "3":
                snmp.update({"user": creds.v3_user, "auth_protocol": creds.v3_auth_protocol,
                             "auth_key": creds.v3_auth_key,
                             "priv_protocol": creds.v3_priv_protocol,
                             "priv_key": creds.v3_priv_key})
            entry["snmp"] = snmp
        switches.append(entry)
    return {"scenario": scenario.name, "epoch_ns": epoch_ns, "speed": speed,
            "sample_interval_s": scenario.sample_interval_s, "duration_s": scenario.duration_s,
            "te_controller": te_url, "switches": switches}
