"""Vendor profiles as data: every file loads, templates match what they should, and no more."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.gnmi.mapping import IGNORED, UNKNOWN, PathMapper, compile_template, split_path
from collectors.gnmi.subscription import subscribe_requests
from collectors.profile import GnmiProfile, SnmpProfile, available, load_profile
from pipeline.errors import ConfigError
from pipeline.metrics import CATALOG


def test_every_builtin_profile_loads() -> None:
    names = set(available())
    assert {"openconfig", "arista", "sonic", "cumulus", "snmp"} <= names
    for name in names:
        profile = load_profile(name)
        assert profile.name == name


def test_templates() -> None:
    pattern = compile_template("/interfaces/interface[name={port}]/state/counters/in-octets")
    m = pattern.match("/interfaces/interface[name=Ethernet1/1]/state/counters/in-octets")
    assert m is not None and m["port"] == "Ethernet1/1"  # Arista names carry slashes
    assert not pattern.match("/interfaces/interface[name=Ethernet1]/state/counters/in-octetsx")
    q = compile_template("/COUNTERS/Ethernet*/Queues/{port}:{qual}/SAI_QUEUE_STAT_PACKETS")
    m = q.match("/COUNTERS/Ethernet*/Queues/Ethernet8:3/SAI_QUEUE_STAT_PACKETS")
    assert m is not None and (m["port"], m["qual"]) == ("Ethernet8", "3")
    deep = compile_template("/qos/interfaces/interface[interface-id=*]/switch-priority"
                            "[priority=*]/state/**")
    assert deep.match("/qos/interfaces/interface[interface-id=swp1]/switch-priority[priority=3]"
                      "/state/counters/in-pause-pkts")
    assert split_path("/a/b[k=v/w][j=x]/c") == [("a", {}), ("b", {"k": "v/w", "j": "x"}),
                                                 ("c", {})]


def test_every_profile_reaches_the_catalog_it_claims() -> None:
    """Each gNMI profile maps the core signals; qualified metrics always get a qualifier."""
    core = {"if_in_octets", "if_out_octets", "if_in_fcs_errors", "if_oper_status",
            "pfc_rx_frames", "pfc_tx_frames", "queue_tx_pkts"}
    for name in ("openconfig", "arista", "sonic", "cumulus"):
        profile = load_profile(name)
        assert isinstance(profile, GnmiProfile)
        metrics = {leaf.metric for g in profile.groups for leaf in g.leaves.values()}
        assert core <= metrics, (name, core - metrics)
    snmp = load_profile("snmp")
    assert isinstance(snmp, SnmpProfile)
    assert core - {"queue_ecn_marked_pkts"} <= {m for c in snmp.columns for m in c.metrics()}


def test_mapper_resolves_once_and_keeps_unknown_and_ignored_apart() -> None:
    profile = load_profile("cumulus")
    assert isinstance(profile, GnmiProfile)
    mapper = PathMapper(profile)
    base = "/qos/interfaces/interface[interface-id=swp3]/switch-priority[priority=3]/state"
    sid = mapper.resolve(f"{base}/counters/in-pause-pkts")
    spec = mapper.specs[sid]
    assert (CATALOG[spec.metric].name, spec.port, spec.qual) == ("pfc_rx_frames", "swp3", 3)
    assert mapper.resolve(f"{base}/counters/in-pause-pkts") == sid
    assert mapper.resolve(f"{base}/in-pause-duration") != sid
    assert mapper.resolve(f"{base}/counters/some-new-counter") == IGNORED
    assert mapper.resolve("/system/state/hostname") == UNKNOWN


def test_subscriptions_follow_the_profile() -> None:
    sonic = load_profile("sonic")
    assert isinstance(sonic, GnmiProfile)
    requests = subscribe_requests(sonic, 2.0, "json_ietf")
    assert [r.subscribe.prefix.target for r in requests] == ["COUNTERS_DB", "APPL_DB"]
    counters = requests[0].subscribe.subscription
    assert ["/".join(e.name for e in s.path.elem) for s in counters] == [
        "COUNTERS/Ethernet*", "COUNTERS/Ethernet*/Queues"]
    assert counters[0].sample_interval == 2_000_000_000


def test_a_new_vendor_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "acme.yaml").write_text("""
name: acme
protocol: gnmi
origin: acme
groups:
  - path: /ports/port[id={port}]/stats
    leaves: {rx-bytes: if_in_octets, "pfc/rx[prio={qual}]": pfc_rx_frames}
""")
    profile = load_profile("acme", (str(tmp_path),))
    assert isinstance(profile, GnmiProfile)
    mapper = PathMapper(profile)
    assert mapper.resolve("/ports/port[id=p1]/stats/pfc/rx[prio=2]") >= 0


@pytest.mark.parametrize(("body", "error"), [
    ("groups: [{path: '/a[n={port}]', leaves: {x: no_such_metric}}]", "unknown metric"),
    ("groups: [{path: '/a[n={port}]', leaves: {x: pfc_rx_frames}}]", "must capture {qual}"),
    ("groups: [{path: '/a', leaves: {x: if_in_octets}}]", "capture {port}"),
    ("groups: [{path: '/a[n={port}]', leaves: {x: {metric: if_oper_status, enum: nope}}}]",
     "enum 'nope'"),
    ("groups: [{path: '/a[n={port}]', mode: sometimes, leaves: {x: if_in_octets}}]", "mode"),
])
def test_profile_mistakes_are_config_errors(tmp_path: Path, body: str, error: str) -> None:
    (tmp_path / "bad.yaml").write_text(f"name: bad\nprotocol: gnmi\n{body}\n")
    with pytest.raises(ConfigError, match=error):
        load_profile("bad", (str(tmp_path),))
