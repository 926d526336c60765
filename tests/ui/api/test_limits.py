"""The API's limits against the live API (uvicorn on loopback): the token is checked before a body
is read, a body is capped before it is buffered, every field is bounded, a command too large for
the bus (a real Kafka broker) is refused before it is sent, names with a trailing newline are
refused, and the OpenAPI document says all of it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pipeline.bus.base import Topics
from pipeline.config import BusSettings
from tests.ui.api.conftest import Serve, bearer
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.guard import MAX_BODY_BYTES, MAX_QUERY_BYTES

MB = 1 << 20


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def raw_post(url: str, headers: dict[str, str], length: int, send: int) -> tuple[str, int]:
    """POST /v1/commands announcing ``length`` body bytes; send up to ``send`` of them in 1 MiB
    pieces until the server stops taking them; the response and how many bytes were taken."""
    sock = socket.create_connection(address(url), timeout=30)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall((f"POST /v1/commands HTTP/1.1\r\nHost: test\r\nContent-Type: application/json"
                  f"\r\nContent-Length: {length}\r\n{head}\r\n").encode())
    sent = 0
    piece = b" " * MB
    try:
        while sent < send:
            sock.sendall(piece)
            sent += len(piece)
    except OSError:  # the server closed the connection: it did not want the rest
        pass
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except OSError:
        pass
    sock.close()
    return answer.decode("latin-1"), sent


def status_of(answer: str) -> int:
    return int(answer.split(" ", 2)[1])


def body_of(answer: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(answer.split("\r\n\r\n", 1)[1])
    return parsed


def test_a_100mb_body_without_a_token_is_refused_unread(serve: Serve) -> None:
    live = serve()
    t0 = time.perf_counter()
    answer, sent = raw_post(live.url, {}, 100 * MB, 100 * MB)
    seconds = time.perf_counter() - t0
    assert status_of(answer) == 401, answer
    assert "needs Authorization: Bearer" in body_of(answer)["error"]
    assert "connection: close" in answer.lower()
    # the server closed the connection: the client could not push the 100 MB through
    assert sent < 100 * MB
    print(f"\n100 MB without a token: 401 after {sent / MB:.0f} MB were taken by the sockets, "
          f"{seconds * 1000:.0f} ms")
    with live.http() as http:  # and the API goes on answering
        assert http.get("/v1/clock").status_code == 200


def test_a_body_over_the_cap_is_refused_before_it_is_read(serve: Serve) -> None:
    live = serve()
    answer, sent = raw_post(live.url, bearer("operator"), 100 * MB, 100 * MB)
    assert status_of(answer) == 413, answer
    assert f"at most {MAX_BODY_BYTES:,}" in body_of(answer)["error"]
    assert sent < 100 * MB


def test_a_chunked_body_is_counted_as_it_arrives(serve: Serve) -> None:
    live = serve()
    consumer = live.commands()
    given = 0

    def pieces() -> Iterator[bytes]:
        nonlocal given
        yield b'{"kind": "approve", "target": "' + FAULTY_LINK.encode() + b'", "comment": "'
        for _ in range(4):
            given += 512 << 10
            yield b"x" * (512 << 10)
        yield b'"}'

    with live.http("operator") as http:
        try:
            resp = http.post("/v1/commands", content=pieces())
            status, text = resp.status_code, resp.text
        except httpx.TransportError as exc:  # the server closed while the client still sent
            status, text = 413, str(exc)
    assert status == 413, text
    assert consumer.poll(0.2) == []


def test_a_body_under_the_cap_with_a_field_over_its_bound_is_a_422(serve: Serve) -> None:
    live = serve()
    consumer = live.commands()
    with live.http("operator") as http:
        long_id = http.post("/v1/commands", json={"kind": "expire_silence",
                                                  "silence_id": "s" * 500_000})
        huge_time = http.post("/v1/commands", content=(
            b'{"kind": "silence", "matchers": ["alertname=x"], "ends_ns": 1e40}'),
            headers={"content-type": "application/json"})
        huge_int = http.post("/v1/commands", json={
            "kind": "silence", "matchers": ["alertname=x"], "ends_ns": 10**40})
    assert long_id.status_code == 422, long_id.text
    assert long_id.json()["error"] == "silence_id: String should have at most 64 characters"
    for resp in (huge_time, huge_int):
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"].startswith("ends_ns: ")
        assert "below 4102444800000000000" in resp.json()["error"]
    assert consumer.poll(0.2) == []


def test_names_with_a_trailing_newline_are_refused(serve: Serve) -> None:
    live = serve()
    consumer = live.commands()
    with live.http("operator") as http:
        series = http.get("/v1/series?device=leaf0%0A&port=Ethernet1&metric=pfc_rx_frames")
        latest = http.get("/v1/latest?device=leaf0%0A")
        alerts = http.get("/v1/alerts?entity=leaf3~spine2%0A")
        command = http.post("/v1/commands", json={"kind": "approve",
                                                  "target": FAULTY_LINK + "\n"})
    for resp in (series, latest, alerts, command):
        assert resp.status_code == 400, resp.text
        assert "is not a valid" in resp.json()["error"]
    assert consumer.poll(0.2) == []


def test_a_long_query_string_is_a_414(serve: Serve) -> None:
    live = serve()
    with live.http() as http:
        resp = http.get("/v1/alerts", params={"entity": ["leaf1"] * (MAX_QUERY_BYTES // 8)})
    assert resp.status_code == 414
    assert "query string" in resp.json()["error"]


def test_an_unknown_parameter_is_refused_not_ignored(serve: Serve) -> None:
    live = serve()
    with live.http() as http:
        typo = http.get("/v1/alerts", params={"strat": "now-1h"})
        fine = http.get("/v1/alerts", params={"start": "now-1h"})
    assert typo.status_code == 400
    assert typo.json()["error"].startswith("/v1/alerts takes no parameter 'strat'; it takes at,")
    assert fine.status_code == 200


def test_an_unknown_path_or_method_is_refused_at_the_gate(serve: Serve) -> None:
    live = serve()
    with live.http() as http:
        assert http.get("/v1/nothing").status_code == 404
        wrong = http.delete("/v1/alerts")
        assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
        assert http.head("/v1/clock").status_code == 405


def test_the_openapi_document_declares_the_refusals(serve: Serve) -> None:
    live = serve()
    with live.http() as http:
        spec = http.get("/openapi.json").json()
    error = {"$ref": "#/components/schemas/ErrorBody"}
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            want = {"401"} if path in ("/healthz", "/v1/identity") else {"400", "401", "422"}
            if method == "post":
                want |= {"403", "413"}
            assert want <= codes, (method, path, codes)
            for code in want:
                assert op["responses"][code]["content"]["application/json"]["schema"] == error
            assert op["security"][0] == {"bearer": []}
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    body = spec["paths"]["/v1/commands"]["post"]["requestBody"]["content"]["application/json"]
    kinds = body["schema"]["discriminator"]["mapping"]
    assert {"approve", "reject", "repair", "silence", "expire_silence", "resume"} <= set(kinds)
    for ref in kinds.values():
        schema = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert "kind" in schema["required"]
        assert not {"by", "issued_at_ns", "version"} & set(schema["properties"])
        assert schema["additionalProperties"] is False
    silence = spec["components"]["schemas"]["Silence"]["properties"]
    assert silence["ends_ns"]["exclusiveMaximum"] == 4102444800000000000


@pytest.mark.integration
def test_a_command_too_large_for_the_bus_is_refused_before_it_is_sent(
        serve: Serve, kafka_settings: BusSettings, unique_name: Any) -> None:
    """A real broker, a producer configured to send at most 1 KiB: a command with a long comment
    is a 400 naming the setting (it was a 503 MessageSizeTooLargeError), a small one is sent."""
    from pipeline.bus.kafka import KafkaBus

    settings = kafka_settings.model_copy(update={
        "topic_prefix": unique_name("lim") + ".",
        "kafka": kafka_settings.kafka.model_copy(update={"max_message_bytes": 1024,
                                                         "batch_bytes": 1024})})
    bus = KafkaBus(settings)
    try:
        live = serve(bus=bus, topics=Topics(settings.topic_prefix),
                     max_message_bytes=settings.kafka.max_message_bytes)
        consumer = live.commands()
        with live.http("operator") as http:
            big = http.post("/v1/commands", json={"kind": "approve", "target": FAULTY_LINK,
                                                  "comment": "c" * 1500})
            small = http.post("/v1/commands", json={"kind": "approve", "target": FAULTY_LINK,
                                                    "comment": "ok"})
        assert big.status_code == 400, big.text
        assert "bus.kafka.max_message_bytes" in big.json()["error"]
        assert small.status_code == 202, small.text
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got = consumer.poll(1.0)
        assert [json.loads(m.value or b"")["id"] for m in got] == [small.json()["id"]]
        consumer.close()
    finally:
        bus.close()
