"""A tiny gNMI collector of our own, the peer ``--part peer`` is tested with: pygnmi's protobufs
and its dict conversion (``telemetryParser``), one thread per subscription, one JSON line per
notification on standard output in gnmic's shape (``{"source": ..., "updates": [...]}``).

``python tests/rocewatch/pygnmi_peer.py TARGETS_FILE`` with the file ``--part peer`` writes for
``{targets_file}``; subscribes as rocewatch's collector does (the profile's requests)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from pygnmi.client import telemetryParser
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.subscription import subscribe_requests
from collectors.profile import GnmiProfile, load_profile

_out = threading.Lock()


def _requests(request: pb.SubscribeRequest, stop: threading.Event) -> Iterator[Any]:
    yield request
    stop.wait()  # the request stream stays open: the subscription lives until we stop


def _subscribe(target: dict[str, Any], request: pb.SubscribeRequest,
               stop: threading.Event) -> None:
    channel = grpc.insecure_channel(target["address"])
    rpc = channel.stream_stream("/gnmi.gNMI/Subscribe",
                                request_serializer=pb.SubscribeRequest.SerializeToString,
                                response_deserializer=pb.SubscribeResponse.FromString)
    metadata = (("username", target["username"]), ("password", target["password"]))
    try:
        for response in rpc(_requests(request, stop), metadata=metadata):
            parsed = telemetryParser(response)
            if "update" not in parsed:
                continue
            line = json.dumps({"source": target["name"],
                               "updates": parsed["update"].get("update", [])}, default=str)
            with _out:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
    except grpc.RpcError:
        pass  # the target went away: this tiny peer does not reconnect
    finally:
        channel.close()


def main() -> None:
    targets = json.loads(Path(sys.argv[1]).read_text())
    stop = threading.Event()
    threads = []
    for target in targets:
        profile = load_profile(target["profile"])
        assert isinstance(profile, GnmiProfile)
        for request in subscribe_requests(profile, target["sample_interval_s"],
                                          profile.encoding):
            thread = threading.Thread(target=_subscribe, args=(target, request, stop),
                                      daemon=True)
            thread.start()
            threads.append(thread)
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        stop.set()


if __name__ == "__main__":
    main()
