"""An incident's pause tree over the fabric: from its root (a host, a switch, a cycle of links)
out along every link its symptoms sit on, so a person sees how far the pauses climbed (leaf →
spine → aggregation → the spines and leaves of other zones).

The tree is read from what the correlator published: the incident's own ports and the ports of
the symptoms it explains. Each such port's link (or host) is a hop; the nodes are the switches
and hosts at the hops' ends. Walking breadth first from the root, a hop's *downstream* end is
the one nearer the root (it sends the pauses) and its *upstream* end the farther one (it is
paused: it holds traffic for the root). A symptom whose hops do not connect to the root is kept
at depth -1: it is explained, yet no symptomatic link joins it to the root.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from pipeline.errors import ConfigError
from pipeline.topology.model import Host, Link, Port
from pipeline.topology.names import HOST
from ui.query.fabric_index import AGGREGATION, FabricIndex
from ui.query.status import alert_level
from ui.query.views import LEVELS, AlertView, Level, PauseTree, TreeEdge, TreeNode


def pause_tree(incident: AlertView, symptoms: Sequence[AlertView],
               index: FabricIndex) -> PauseTree:
    topo = index.topology
    explained = {s.fingerprint for s in symptoms}
    hops: dict[str, tuple[str, str]] = {}
    hop_ports: dict[str, list[str]] = {}
    hop_level: dict[str, int] = {}
    node_level: dict[str, int] = {}

    def touch(node: str, rank: int) -> None:
        node_level[node] = min(node_level.get(node, LEVELS.index("ok")), rank)

    for alert in (incident, *symptoms):
        rank = LEVELS.index(alert_level(alert, explained))
        for text in alert.ports:
            try:
                port = Port.parse(text)
            except ConfigError:
                continue
            att = topo.attachment(port)
            if isinstance(att, Link):
                hop, ends = att.id, (att.a.device, att.b.device)
            elif isinstance(att, Host):
                hop, ends = att.name, (att.port.device, att.name)
            else:
                touch(port.device, rank)
                continue
            hops[hop] = ends
            hop_ports.setdefault(hop, [])
            if text not in hop_ports[hop]:
                hop_ports[hop].append(text)
            hop_level[hop] = min(hop_level.get(hop, LEVELS.index("ok")), rank)
            touch(port.device, rank)
        if alert.entity in index.switch_idx or alert.entity in topo.host_by_name:
            touch(alert.entity, rank)
    roots = _roots(incident, index, hops)
    for r in roots:
        touch(r, LEVELS.index(alert_level(incident, explained)))
    depth = _walk(roots, hops)
    for node in node_level:
        depth.setdefault(node, -1)
    edges = []
    for hop, (a, b) in hops.items():
        da, db = depth.get(a, -1), depth.get(b, -1)
        down, up = (a, b) if (da if da >= 0 else 1 << 30) <= (db if db >= 0 else 1 << 30) \
            else (b, a)
        edges.append(TreeEdge(link=hop, upstream=up, downstream=down,
                              level=LEVELS[hop_level[hop]], ports=sorted(hop_ports[hop])))
    edges.sort(key=lambda e: (_depth_key(depth.get(e.upstream, -1)), e.link))
    nodes = [TreeNode(name=n, role=_role(index, n), group=_group(index, n),
                      depth=depth.get(n, -1), level=_level(node_level.get(n)))
             for n in set(node_level) | set(depth)]
    nodes.sort(key=lambda t: (_depth_key(t.depth), LEVELS.index(t.level), t.name))
    groups = sorted({t.group for t in nodes if t.group}, key=lambda g: (g != AGGREGATION, g))
    return PauseTree(fingerprint=incident.fingerprint, incident=incident.name,
                     entity=incident.entity, root=roots[0] if roots else incident.entity,
                     nodes=nodes, edges=edges, groups=groups)


def _roots(incident: AlertView, index: FabricIndex, hops: dict[str, tuple[str, str]]) -> list[str]:
    """Where the pauses start: the incident's host or switch, or a cycle's switches."""
    topo = index.topology
    if incident.entity in topo.host_by_name or incident.entity in index.switch_idx:
        return [incident.entity]
    link = topo.link_by_id.get(incident.entity)
    if link is not None:
        return [link.a.device, link.b.device]
    found = [Port.parse(p).device for p in incident.ports if ":" in p]
    return list(dict.fromkeys(found)) or [n for ends in list(hops.values())[:1] for n in ends]


def _walk(roots: Sequence[str], hops: dict[str, tuple[str, str]]) -> dict[str, int]:
    """Hops from the nearest root, breadth first over the symptomatic hops."""
    near: dict[str, list[tuple[str, str]]] = {}
    for hop, (a, b) in hops.items():
        near.setdefault(a, []).append((hop, b))
        near.setdefault(b, []).append((hop, a))
    depth = {r: 0 for r in roots}
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        for _, other in sorted(near.get(node, ())):
            if other not in depth:
                depth[other] = depth[node] + 1
                queue.append(other)
    return depth


def _depth_key(depth: int) -> int:
    return depth if depth >= 0 else 1 << 30


def _level(rank: int | None) -> Level:
    return LEVELS[rank] if rank is not None else "ok"


def _role(index: FabricIndex, node: str) -> str:
    s = index.switch_idx.get(node)
    if s is not None:
        return index.roles[s]
    return HOST if node in index.topology.host_by_name else "other"


def _group(index: FabricIndex, node: str) -> str:
    s = index.switch_idx.get(node)
    if s is not None:
        return index.group_of[s]
    host = index.topology.host_by_name.get(node)
    if host is not None and host.port.device in index.switch_idx:
        return index.group_of[index.switch_idx[host.port.device]]
    return ""

