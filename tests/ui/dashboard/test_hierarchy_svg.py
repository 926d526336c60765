"""The fabric at scale as SVG: every switch a tile in its zone, the red ones red, a pause tree
drawn between the tiles of its hops, and a size that stays small on the reference fabric and does
not grow with its hosts, ports or links."""

from __future__ import annotations

import html
import re

from pipeline.topology.shape import FabricShape
from ui.dashboard.hierarchy_svg import group_detail, overview
from ui.query.fabric_index import FabricIndex, build_index
from ui.query.fabric_state import switch_health
from ui.query.health import groups_worst_first, roll_up
from ui.query.snapshot import PortSnapshot
from ui.query.views import EntityStatus, GroupHealth, PauseTree, SwitchHealth, TreeEdge, TreeNode

REFERENCE = FabricShape(spines=16, leaves=96, hosts_per_leaf=32, uplinks_per_pair=2, zones=8,
                        aggs=32)


def status(entity: str, kind: str, level: str = "critical", root: bool = True) -> EntityStatus:
    return EntityStatus(entity=entity, kind=kind, level=level, alert="pfc_storm",
                        fingerprint="0" * 16, root_cause=root, summary="<b>x</b> & y",
                        since_ns=1, alerts=1)


def healths(index: FabricIndex, statuses: list[EntityStatus]) -> tuple[list[GroupHealth],
                                                                       list[SwitchHealth]]:
    rolled = roll_up(index, statuses)
    return (groups_worst_first(index, rolled),
            switch_health(index, rolled, PortSnapshot.empty(index), tuple(range(928))))


def tiles(svg: str) -> dict[str, str]:
    return {html.unescape(e): v
            for e, v in re.findall(r'<g data-entity="([^"]+)" data-level="([a-z]+)"', svg)}


def healthy(svg: str) -> dict[str, int]:
    """Each group's healthy tiles (one path of squares): group -> how many."""
    found = {html.unescape(g): (int(n), d) for g, n, d in re.findall(
        r'<path class="rw-healthy" data-group="([^"]+)" data-level="ok" data-switches="(\d+)"'
        r'[^>]* d="([^"]+)"', svg)}
    assert all(d.count("M") == n for n, d in found.values())  # one square per switch
    return {g: n for g, (n, _) in found.items()}


def tree_lines(svg: str) -> list[str]:
    return sorted(html.unescape(e)
                  for e in re.findall(r'<line class="rw-tree" data-entity="([^"]+)"', svg))


def test_the_reference_fabric_is_928_tiles_in_zone_panels() -> None:
    index = build_index(REFERENCE.build())
    host = index.topology.host_ports("z3-leaf7")[0].name
    groups, switches = healths(index, [
        status(host, "host"),
        status("agg5~z6-spine2", "link", "warning", root=False)])
    assert [g.id for g in groups][:2] == ["z3", "agg"]  # worst first
    svg = overview(groups, switches)
    found = tiles(svg)  # the switches that are not ok, each its own tile
    assert found == {"z3-leaf7": "critical", "agg5": "warning", "z6-spine2": "warning"}
    ok = healthy(svg)  # the others, one path per group
    assert sum(ok.values()) + len(found) == 928
    assert ok["z3"] == 111 and ok["agg"] == 31 and ok["z1"] == 112
    assert len(re.findall(r'<rect[^>]* data-group="z\d"', svg)) == 8
    assert f"pfc_storm on {host}" in html.unescape(svg)  # each panel names its worst
    assert "<b>" not in svg  # summaries are text
    assert len(svg) < 40_000


def test_a_pause_tree_is_drawn_between_the_tiles_of_its_hops() -> None:
    index = build_index(REFERENCE.build())
    groups, switches = healths(index, [status("host2049", "host")])
    nodes = [TreeNode(name=n, role=r, group=g, depth=d, level="warning") for n, r, g, d in (
        ("host2049", "host", "z3", 0), ("z3-leaf1", "leaf", "z3", 1),
        ("z3-spine4", "spine", "z3", 2), ("agg9", "agg", "agg", 3),
        ("z6-spine4", "spine", "z6", 4))]
    hops = [("host2049", "host2049", "z3-leaf1"), ("z3-leaf1~z3-spine4", "z3-leaf1", "z3-spine4"),
            ("agg9~z3-spine4", "z3-spine4", "agg9"), ("agg9~z6-spine4", "agg9", "z6-spine4")]
    tree = PauseTree(fingerprint="0" * 16, incident="pfc_storm", entity="host2049",
                     root="host2049", nodes=nodes, groups=["agg", "z3", "z6"],
                     edges=[TreeEdge(link=h, downstream=a, upstream=b, level="warning",
                                     ports=[]) for h, a, b in hops])
    svg = overview(groups, switches, tree)
    # the host's hop ends on its own leaf's tile: nothing to draw; the three others are lines
    assert tree_lines(svg) == sorted(h for h, _, _ in hops[1:])
    assert svg.count('class="rw-tree-root"') == 1  # the root (the host, at its leaf) is ringed
    assert "root: host2049" in svg
    z3 = next(g for g in groups if g.id == "z3")
    detail = group_detail(z3, switches, [s for s in switches if s.role == "agg"], tree)
    assert len(tiles(detail)) == 112 + 32
    assert 'data-mode="group"' in detail and ">spine4<" in detail  # named tiles
    # z6 is not drawn in z3's detail
    assert tree_lines(detail) == sorted(["z3-leaf1~z3-spine4", "agg9~z3-spine4"])


def _storm_tree(index: FabricIndex) -> PauseTree:
    """A tree over every port of the storm's reach: each host of z3-leaf7 pauses its leaf, the
    leaf every spine of z3 over each of its uplinks, each of those spines every aggregation
    switch over each of its links."""
    topo = index.topology

    def hops(down: str, up: str) -> list[TreeEdge]:
        return [TreeEdge(link=ln.id, downstream=down, upstream=up, level="warning", ports=[])
                for ln in topo.links_between(down, up)]

    spines = [s for s in topo.spines if s.startswith("z3-")]
    edges = [TreeEdge(link=h.name, downstream=h.name, upstream="z3-leaf7", level="warning",
                      ports=[]) for h in topo.host_ports("z3-leaf7")]
    for spine in spines:
        edges += hops("z3-leaf7", spine)
        for agg in topo.aggs:
            edges += hops(spine, agg)
    nodes = [TreeNode(name=h.name, role="host", group="z3", depth=0, level="critical")
             for h in topo.host_ports("z3-leaf7")]
    nodes += [TreeNode(name=n, role=str(topo.role(n)), group="agg" if n in topo.aggs else "z3",
                       depth=1, level="warning") for n in ["z3-leaf7", *spines, *topo.aggs]]
    root = nodes[0].name
    return PauseTree(fingerprint="0" * 16, incident="pfc_storm", entity=root, root=root,
                     nodes=nodes, groups=["agg", "z3"], edges=edges)


def test_the_overview_does_not_grow_with_hosts_ports_or_links() -> None:
    """The same 928 switches with twice the hosts and twice the parallel links: the same
    picture, even with a pause tree over every one of the storm's ports."""
    sizes = []
    for hosts, uplinks in ((32, 2), (64, 4)):
        shape = FabricShape(spines=16, leaves=96, hosts_per_leaf=hosts,
                            uplinks_per_pair=uplinks, zones=8, aggs=32)
        index = build_index(shape.build())
        host = index.topology.host_ports("z3-leaf7")[0].name
        groups, switches = healths(index, [status(host, "host")])
        tree = _storm_tree(index)
        assert len(tree.edges) > hosts + 16 * uplinks
        svg = overview(groups, switches, tree)
        # one bundle per pair of tiers, each stroke once per pair of switches
        bundles = re.findall(r'<path class="rw-tree" data-entity="([^"]+)"[^>]* data-hops='
                             r'"(\d+)"[^>]* d="([^"]+)"', svg)
        assert {html.unescape(b) for b, _, _ in bundles} == {"z3 leaves → z3 spines",
                                                              "z3 spines → aggregation"}
        assert sum(int(n) for _, n, _ in bundles) == len(tree.edges) - hosts
        assert {d.count("M") for _, _, d in bundles} == {16, 16 * 32}
        sizes.append(len(svg))
    # twice the hosts and links add nothing drawn: only a few names and counts in the texts
    # differ (the root host's number, the first links a bundle names)
    assert abs(sizes[0] - sizes[1]) < 64 and sizes[0] < 60_000
