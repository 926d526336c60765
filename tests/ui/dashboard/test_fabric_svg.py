"""The fabric picture: what is drawn red, how names are escaped, and the tiles of big fabrics."""

from __future__ import annotations

import re

from pipeline.topology.model import spine_leaf
from ui.dashboard.fabric_svg import PICTURE_MAX_LEAVES, draw
from ui.query.views import EntityStatus, TopologyView


def view(spines: int, leaves: int, hosts: int) -> TopologyView:
    data = spine_leaf(spines, leaves, hosts).to_json()
    return TopologyView(known=True, devices=[], **data)


def status(entity: str, kind: str, level: str = "critical") -> EntityStatus:
    return EntityStatus(entity=entity, kind=kind, level=level, alert="faulty_link",
                        fingerprint="0" * 16, root_cause=True, summary="<b>x</b> & y",
                        since_ns=1, alerts=1)


def levels(svg: str) -> dict[str, str]:
    return dict(re.findall(r'data-entity="([^"]+)" data-level="([a-z]+)"', svg))


def test_picture_colours_only_the_faulty_link() -> None:
    drawing = draw(view(2, 4, 2), {"leaf3~spine2": status("leaf3~spine2", "link")})
    assert drawing.mode == "picture"
    found = levels(drawing.svg)
    assert found["leaf3&#126;spine2"] == "critical"
    assert sum(1 for v in found.values() if v == "critical") == 1
    assert len(found) == 8 + 6 + 8  # links, switches, hosts
    assert "<b>" not in drawing.svg and "&#60;b&#62;x" in drawing.svg  # summaries are text


def test_big_fabrics_are_tiles() -> None:
    topo = view(16, 256, 16)
    assert PICTURE_MAX_LEAVES < 256
    bad = {"host778": status("host778", "host"), "leaf200": status("leaf200", "switch",
                                                                   "warning")}
    drawing = draw(topo, bad)
    assert drawing.mode == "tiles"
    found = levels(drawing.svg)
    assert len(found) == 16 + 256  # one tile per switch, not 8192 links and hosts
    assert found["leaf49"] == "critical"  # host778 hangs off leaf49
    assert found["leaf200"] == "warning"
    assert len(drawing.svg) < 200_000


def test_a_drained_link_is_dashed_and_says_by_whom() -> None:
    held = "leaf2~spine1 drained: maintenance by run run-7 (faulty_link) since 21:40:00"
    drawing = draw(view(2, 4, 2), {"leaf3~spine2": status("leaf3~spine2", "link")},
                   {"leaf2~spine1": held})
    [line] = re.findall(r'<line data-entity="leaf2&#126;spine1"[^>]*>', drawing.svg)
    assert 'stroke-dasharray="7 5"' in line and 'data-drained="true"' in line
    assert 'stroke="#6b8fb3"' in line  # the maintenance colour: nothing worse is on it
    assert "run run-7" in drawing.svg
    [red] = re.findall(r'<line data-entity="leaf3&#126;spine2"[^>]*>', drawing.svg)
    assert "stroke-dasharray" not in red
