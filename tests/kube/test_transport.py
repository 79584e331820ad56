"""The HTTP/1.1 exchange the kube backend writes and reads itself, against a scripted server.

The server is a plain TCP socket on 127.0.0.1 (port 0) that answers each request with the next
scripted answer, byte for byte, so that what API servers and proxies may send is covered:
chunked bodies, interim ``100 Continue`` answers, ``Connection: close``, a kept-alive
connection the server drops while it is idle, an answer cut short.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import orjson
import pytest
from kubernetes import client  # a test dependency (pyproject's test extra)

from olmkit.kube.transport import ApiUnreachable, Ref, Transport
from olmkit.store import Expired, NotFound
from tests.kube.conftest import close_listener


class Scripted:
    """Answers requests with scripted bytes; ``None`` in the script closes the connection instead."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[int, bytes, bytes]] = []  # connection number, head, body
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        reader = conn.makefile("rb")
        with conn, reader:
            while self.answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
                body = reader.read(length[0]) if length else b""
                self.requests.append((number, head, body))
                answer = self.answers.pop(0)
                if answer is None:
                    return
                conn.sendall(answer)
                if b"Connection: close" in answer:
                    return

    def close(self) -> None:
        close_listener(self._listener, self._accepting)


@pytest.fixture
def scripted() -> Iterator[list[Scripted | Transport]]:
    """What a test opened (servers and transports), closed after it."""
    opened: list[Scripted | Transport] = []
    yield opened
    for item in opened:
        item.close()


def transport_for(opened: list[Scripted | Transport], answers: list[bytes | None]) -> tuple[Scripted, Transport]:
    server = Scripted(answers)
    configuration = client.Configuration(host=f"http://127.0.0.1:{server.port}")
    transport = Transport(client.ApiClient(configuration))
    opened += [server, transport]
    return server, transport


def json_answer(obj: object, *extra: str) -> bytes:
    body = orjson.dumps(obj)
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_requests_share_a_kept_alive_connection_and_send_their_bodies(scripted) -> None:
    server, transport = transport_for(scripted, [json_answer({"n": 1}), json_answer({"n": 2})])

    first = transport.request("GET", "/api/v1/namespaces", Ref(), query={"limit": 2})
    second = transport.request("POST", "/api/v1/namespaces", Ref(), body={"metadata": {"name": "x"}})

    assert [{"n": 1}, {"n": 2}] == [first, second]
    assert 1 == server.connections
    (_, get_head, _), (_, post_head, post_body) = server.requests
    assert get_head.startswith(b"GET /api/v1/namespaces?limit=2 HTTP/1.1\r\n")
    assert post_head.startswith(b"POST /api/v1/namespaces HTTP/1.1\r\n")
    assert b"Content-Type: application/json\r\n" in post_head
    assert {"metadata": {"name": "x"}} == orjson.loads(post_body)
    assert 2 == transport.request_count


def test_a_chunked_answer_after_an_interim_one_is_read_whole(scripted) -> None:
    body = orjson.dumps({"items": ["a" * 100, "b"]})
    chunked = (
        b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:])) + b"0\r\nX-Trailer: t\r\n\r\n"
    )
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked
    server, transport = transport_for(scripted, [answer, json_answer({"after": True})])

    assert {"items": ["a" * 100, "b"]} == transport.request("GET", "/x", Ref())
    assert {"after": True} == transport.request("GET", "/y", Ref())
    assert 1 == server.connections


def test_connection_close_opens_a_new_connection(scripted) -> None:
    server, transport = transport_for(scripted, [json_answer({"n": 1}, "Connection: close"), json_answer({"n": 2})])

    assert {"n": 1} == transport.request("GET", "/x", Ref())
    assert {"n": 2} == transport.request("GET", "/x", Ref())
    assert 2 == server.connections


def test_an_idle_connection_the_server_dropped_is_replaced_once(scripted) -> None:
    """The second request finds its kept-alive connection closed by the server (nothing answered):
    it is sent again on a new connection."""
    server, transport = transport_for(scripted, [json_answer({"n": 1}), None, json_answer({"n": 2})])

    assert {"n": 1} == transport.request("GET", "/x", Ref())
    assert {"n": 2} == transport.request("PUT", "/x", Ref(), body={"v": 2})
    assert [1, 1, 2] == [number for number, _, _ in server.requests]


def test_an_answer_cut_short_is_unreachable_not_retried(scripted) -> None:
    cut = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"partial":'
    server, transport = transport_for(scripted, [cut, json_answer({"never": "sent"})])

    with pytest.raises(ApiUnreachable) as info:
        transport.request("POST", "/x", Ref(), body={})

    assert "cannot reach the API server" in str(info.value)
    assert 1 == len(server.requests)


def test_error_answers_become_store_errors(scripted) -> None:
    status = {"kind": "Status", "code": 404, "reason": "NotFound", "message": 'configmaps "a" not found'}
    body = orjson.dumps(status)
    answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    _, transport = transport_for(scripted, [answer])

    with pytest.raises(NotFound) as info:
        transport.request("GET", "/api/v1/namespaces/ns/configmaps/a", Ref("ConfigMap", "ns", "a"))

    assert ("ConfigMap", "ns", "a") == (info.value.kind, info.value.namespace, info.value.name)


def test_a_closed_port_is_unreachable(scripted) -> None:
    with socket.socket() as bound:  # bound, not listening: nothing accepts there while it is held
        bound.bind(("127.0.0.1", 0))
        transport = Transport(client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{bound.getsockname()[1]}")))
        scripted.append(transport)

        with pytest.raises(ApiUnreachable) as info:
            transport.request("GET", "/x", Ref())

    assert "connection refused" in str(info.value)


def test_a_watch_reads_events_chunk_by_chunk(scripted) -> None:
    """A watch answer's lines are read as their chunks arrive, lines split across chunks too."""
    events = [orjson.dumps({"type": "ADDED", "object": {"n": n}}) + b"\n" for n in range(3)]
    stream = events[0] + events[1][:7]
    chunks = [stream, events[1][7:], events[2]]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    server, transport = transport_for(scripted, [answer])

    watch = transport.stream_lines("/api/v1/configmaps", Ref("ConfigMap"), {"watch": "1"}, read_timeout=5)
    try:
        seen = list(watch)
    finally:
        watch.close()

    assert [{"type": "ADDED", "object": {"n": n}} for n in range(3)] == seen
    assert server.requests[0][1].startswith(b"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\n")


def test_a_refused_watch_is_the_store_error(scripted) -> None:
    body = orjson.dumps({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})
    answer = b"HTTP/1.1 410 Gone\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    _, transport = transport_for(scripted, [answer])

    with pytest.raises(Expired):
        transport.stream_lines("/api/v1/configmaps", Ref("ConfigMap"), {"watch": "1"}, read_timeout=5)
