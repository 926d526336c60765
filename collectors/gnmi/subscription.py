"""What the gNMI collector asks a target for: paths in protobuf form and the SubscribeRequests of a
profile (one STREAM request per ``prefix.target`` and origin: SAMPLE at the target's interval for
counters, ON_CHANGE for status)."""

from __future__ import annotations

from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.mapping import split_path, subscription_path
from collectors.profile import GnmiProfile

ENCODINGS = {"json": pb.JSON, "proto": pb.PROTO, "json_ietf": pb.JSON_IETF}


def parse_path(text: str, origin: str = "", target: str = "") -> pb.Path:
    elems = [pb.PathElem(name=name, key=keys) for name, keys in split_path(text)]
    return pb.Path(elem=elems, origin=origin, target=target)


def subscribe_requests(profile: GnmiProfile, interval_s: float,
                       encoding: str) -> list[pb.SubscribeRequest]:
    """One SubscribeRequest per (target, origin) of the profile's groups (SONiC: per DB)."""
    lists: dict[tuple[str, str], pb.SubscriptionList] = {}
    for group in profile.groups:
        origin = profile.origin if group.origin is None else group.origin
        slist = lists.get((group.target, origin))
        if slist is None:
            slist = lists[(group.target, origin)] = pb.SubscriptionList(
                prefix=pb.Path(origin=origin, target=group.target),
                mode=pb.SubscriptionList.STREAM, encoding=ENCODINGS[encoding])
        paths = ([group.path] if group.subscribe == "container" else
                 [f"{group.path.rstrip('/')}/{rel}" for rel in group.leaves])
        for text in paths:
            sub = slist.subscription.add(path=parse_path(subscription_path(text)))
            if group.mode == "sample":
                sub.mode = pb.SAMPLE
                sub.sample_interval = int(interval_s * 1e9)
            else:
                sub.mode = pb.ON_CHANGE
    return [pb.SubscribeRequest(subscribe=s) for s in lists.values()]
