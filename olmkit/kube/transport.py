"""HTTP to a Kubernetes API server through the official client's configured connection pool.

The ``kubernetes`` client loads the kubeconfig (certificates, tokens, exec plugins, proxies) and
owns the urllib3 pool; this module sends the requests itself, with orjson, and maps API errors
onto :mod:`olmkit.store.errors`.

Why not the client's dynamic client, the other generic path: its discovery reads every API group
version the server has before the first call (against ``olmkit serve``, a one-shot get of a
ConfigMap made 18 requests through it, and 2 here: the ConfigMap's group version, then the GET)
and keeps it in a file under the temporary directory that a later process trusts even when a CRD
has changed since; its objects are wrapped in ``ResourceInstance`` classes the store would unwrap
again. The generated per-kind API classes cannot address custom resources at all, and their
model (de)serialisation is slower than orjson on plain dicts. So: discovery one group version at
a time, as needed (:class:`~olmkit.kube.store.KubeStore`), and plain REST calls for every kind.

A request is one HTTP/1.1 exchange written and read by :class:`_Exchange` on a connection the
client's pool opened (its TLS settings, certificates and proxy-less address): urllib3's request
and response machinery (``http.client``'s header parser among it) cost about 0.25 ms of CPU per
request, four times the exchange itself. A watch keeps its connection and reads its chunks as
they come. Requests through a proxy go through urllib3.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

import attrs
import orjson

from olmkit import __version__
from olmkit.store.errors import AlreadyExists, Conflict, Expired, Forbidden, Invalid, NotFound, StoreError

__all__ = ["ApiUnreachable", "Ref", "Transport", "error_from_status"]

_USER_AGENT: Final = f"olmkit/{__version__}"
#: Seconds to wait for a connection and for each read of a non-watch request.
CONNECT_TIMEOUT: Final = 10.0
READ_TIMEOUT: Final = 60.0


@attrs.frozen
class Ref:
    """What a request concerns, for error messages: kind, namespace, name."""

    kind: str = ""
    namespace: str | None = None
    name: str = ""

    def fields(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name}


@attrs.define(auto_exc=True, eq=False)
class ApiUnreachable(StoreError):
    """The API server cannot be reached (connection refused, TLS failure, timeout)."""

    code = 503
    reason = "ServiceUnavailable"


def error_from_status(status: int, body: Any, ref: Ref) -> StoreError:
    """The store error for an API error response (a ``metav1.Status`` body, when there is one)."""
    reason = str(body.get("reason") or "") if isinstance(body, Mapping) else ""
    message = str(body.get("message") or "") if isinstance(body, Mapping) else ""
    details = body.get("details") if isinstance(body, Mapping) else None
    fields = ref.fields()
    if status == 404:
        return NotFound(message if reason != "NotFound" else "", **fields)
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(**fields)
    if status == 409:
        detail = message.partition(": ")[2] if message.startswith("Operation cannot be fulfilled") else message
        return Conflict(detail, **fields)
    if status in (400, 422):
        field = ""
        if isinstance(details, Mapping):
            causes = details.get("causes")
            if isinstance(causes, list) and causes and isinstance(causes[0], Mapping):
                field = str(causes[0].get("field") or "")
        return Invalid(message or f"the API server refused the request ({status})", field=field, **fields)
    if status == 410:
        return Expired(message, resource_version="", oldest="", **fields)
    if status == 403:
        return Forbidden(message or "forbidden", **fields)
    return StoreError(message or f"the API server answered {status} {reason}".strip(), **fields)


class Transport:
    """Requests to one API server, with the credentials of an :class:`kubernetes.client.ApiClient`.

    Args:
        api_client: a configured client (see :func:`olmkit.kube.config.connect`).
        where: how to name the server in errors (the kubeconfig's file and context).
    """

    def __init__(self, api_client: Any, where: str = "") -> None:
        self.api_client = api_client
        self.configuration = api_client.configuration
        self.host = str(self.configuration.host).rstrip("/")
        self.where = where or self.host
        self._pool = api_client.rest_client.pool_manager
        self._lock = threading.Lock()
        #: requests sent, by HTTP method (watches count as GET)
        self.requests: dict[str, int] = {}
        self._idle: list[_Exchange] = []
        #: whether requests go through :class:`_Exchange` (not through a proxy: urllib3 handles those)
        self.direct = type(self._pool).__name__ == "PoolManager"
        self._path_prefix = urlsplit(self.host).path

    @property
    def request_count(self) -> int:
        """Every request sent so far."""
        return sum(self.requests.values())

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in self.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        params = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        return self.host + path + ("?" + urlencode(params) if params else "")

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str | None,
        *,
        stream: bool,
        read_timeout: float | None,
    ) -> Any:
        import urllib3

        data = None if body is None else orjson.dumps(body)
        with self._lock:
            self.requests[method] = self.requests.get(method, 0) + 1
        if self.direct:
            # the request target: the URL's path (with the server's path prefix) and query
            target = self.url(path, query)[len(self.host) - len(self._path_prefix) :]
            if stream:
                return self._open_stream(target, read_timeout)
            return self._exchange(method, target, data, content_type, read_timeout)
        try:
            return self._pool.request(
                method,
                self.url(path, query),
                body=data,
                headers=self._headers("application/json" if data is not None and not content_type else content_type),
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read_timeout),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: BaseException) -> ApiUnreachable:
        return ApiUnreachable(f"cannot reach the API server at {self.host} ({self.where}): {_cause(exc)}")

    def _exchange(
        self,
        method: str,
        target: str,
        data: bytes | None,
        content_type: str | None,
        read_timeout: float | None,
    ) -> _Answer:
        """One request on a kept-alive connection; a connection the server had closed while idle
        is replaced once (nothing was read from it: the server did not answer the request)."""
        import urllib3

        headers = self._headers("application/json" if data is not None and not content_type else content_type)
        for attempt in range(2):
            with self._lock:
                exchange = self._idle.pop() if self._idle else None
            reused = exchange is not None
            try:
                if exchange is None:
                    exchange = _Exchange(self._pool.connection_from_url(self.host))
                answer = exchange.send(method, target, headers, data, read_timeout)
            except (OSError, urllib3.exceptions.HTTPError, _Broken) as exc:
                if exchange is not None:
                    exchange.close()
                if reused and attempt == 0 and isinstance(exc, _Broken) and exc.unanswered:
                    continue
                raise self._unreachable(exc) from None
            if answer.keep_alive:
                with self._lock:
                    self._idle.append(exchange)
            else:
                exchange.close()
            return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_stream(self, target: str, read_timeout: float | None) -> Any:
        """A watch on a connection of its own: an error's complete :class:`_Answer`, or a :class:`_RawWatch`."""
        import urllib3

        exchange = None
        try:
            exchange = _Exchange(self._pool.connection_from_url(self.host))
            status, fields = exchange.start("GET", target, self._headers(None), None, read_timeout)
            if status >= 400:
                answer = _Answer(status, exchange.body(status, fields)[0], False)
                exchange.close()
                return answer
        except (OSError, urllib3.exceptions.HTTPError) as exc:
            if exchange is not None:
                exchange.close()
            raise self._unreachable(exc) from None
        return _RawWatch(exchange, fields)

    def request(
        self,
        method: str,
        path: str,
        ref: Ref,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Any:
        """Send a request and return its JSON answer; an error answer raises its store error."""
        response = self._send(method, path, query, body, content_type, stream=False, read_timeout=READ_TIMEOUT)
        try:
            answer = orjson.loads(response.data) if response.data else None
        except orjson.JSONDecodeError:
            answer = {"message": response.data[:200].decode("utf-8", "replace")}
        if response.status >= 400:
            raise error_from_status(response.status, answer, ref)
        return answer

    def stream_lines(self, path: str, ref: Ref, query: Mapping[str, Any], read_timeout: float) -> StreamedWatch:
        """Open a watch; its lines are JSON watch events."""
        response = self._send("GET", path, query, None, None, stream=True, read_timeout=read_timeout)
        if isinstance(response, _RawWatch):
            return response
        if response.status >= 400:
            try:
                answer = orjson.loads(response.data) if response.data else None
            except orjson.JSONDecodeError:
                answer = None
            if not isinstance(response, _Answer):
                response.release_conn()
            raise error_from_status(response.status, answer, ref)
        return StreamedWatch(response)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for exchange in idle:
            exchange.close()
        self._pool.clear()


class _Broken(ConnectionError):
    """The connection failed mid-exchange; ``unanswered``: before any byte of an answer arrived."""

    def __init__(self, message: str, *, unanswered: bool) -> None:
        super().__init__(message)
        self.unanswered = unanswered


@attrs.frozen
class _Answer:
    """A complete HTTP answer (what :meth:`Transport.request` reads of a urllib3 response)."""

    status: int
    data: bytes
    keep_alive: bool


class _Exchange:
    """One HTTP/1.1 connection opened by the client's connection pool (so with the kubeconfig's
    TLS settings), on which this module writes requests and reads answers itself."""

    def __init__(self, pool: Any) -> None:
        self.connection = pool._new_conn()  # a new connection, configured by the pool
        self.connection.timeout = CONNECT_TIMEOUT
        self.connection.connect()
        self.sock = self.connection.sock
        self.reader = self.sock.makefile("rb")
        self.host = f"{pool.host}:{pool.port}" if pool.port else str(pool.host)

    def send(
        self, method: str, target: str, headers: Mapping[str, str], data: bytes | None, timeout: float | None
    ) -> _Answer:
        status, fields = self.start(method, target, headers, data, timeout)
        body, keep_alive = self.body(status, fields)
        return _Answer(status, body, keep_alive)

    def start(
        self, method: str, target: str, headers: Mapping[str, str], data: bytes | None, timeout: float | None
    ) -> tuple[int, dict[str, str]]:
        """Send a request and read its answer's status and header fields."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}"]
        lines += [f"{key}: {value}" for key, value in headers.items()]
        if data is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(data or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.settimeout(timeout)
        self.sock.sendall(head + data if data else head)
        while True:
            status_line = self.reader.readline(65537)
            if not status_line:
                raise _Broken("the server closed the connection", unanswered=True)
            version, _, rest = status_line.decode("latin-1").partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/") or not code.isdigit():
                raise _Broken(f"not an HTTP answer: {status_line[:80]!r}", unanswered=False)
            fields = self._fields()
            status = int(code)
            if not 100 <= status < 200:  # skip interim answers (100 Continue)
                break
        fields[":version"] = version
        return status, fields

    def body(self, status: int, fields: Mapping[str, str]) -> tuple[bytes, bool]:
        """The answer's body, and whether the connection can take another request."""
        keep_alive = fields.get(":version") == "HTTP/1.1" and "close" not in fields.get("connection", "").lower()
        if "chunked" in fields.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in fields:
            body = self._exactly(int(fields["content-length"]))
        elif status in (204, 304):
            body = b""
        else:  # until the server closes the connection
            body, keep_alive = self.reader.read(), False
        return body, keep_alive

    def _fields(self) -> dict[str, str]:
        fields: dict[str, str] = {}
        while True:
            line = self.reader.readline(65537)
            if line in (b"\r\n", b"\n"):
                return fields
            if not line:
                raise _Broken("the answer's header ended early", unanswered=False)
            name, _, value = line.decode("latin-1").partition(":")
            fields[name.strip().lower()] = value.strip()

    def _exactly(self, size: int) -> bytes:
        data = self.reader.read(size)
        if len(data) != size:
            raise _Broken("the answer ended early", unanswered=False)
        return bytes(data)

    def _chunked(self) -> bytes:
        return b"".join(self.chunks())

    def chunks(self) -> Iterator[bytes]:
        """The chunks of a chunked body, as they arrive."""
        while True:
            size_line = self.reader.readline(65537)
            if not size_line:
                raise _Broken("the answer ended early", unanswered=False)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _Broken(f"a bad chunk size {size_line[:40]!r}", unanswered=False) from None
            if size == 0:
                self._fields()  # trailers, up to the empty line
                return
            yield self._exactly(size)
            self._exactly(2)  # the chunk's CRLF

    def shutdown(self) -> None:
        """Unblock a read in another thread (it ends with an error)."""
        with contextlib.suppress(Exception):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.reader.close()
        with contextlib.suppress(Exception):
            self.connection.close()


class StreamedWatch:
    """An open watch response: iterate its events; :meth:`shutdown` ends it from another thread."""

    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self.response:
            if line.strip():
                yield orjson.loads(line)

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.response.shutdown()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.response.release_conn()


class _RawWatch(StreamedWatch):
    """A watch answer read from an :class:`_Exchange`: its lines, chunk by chunk as they arrive."""

    def __init__(self, exchange: _Exchange, fields: Mapping[str, str]) -> None:
        self.exchange = exchange
        self.chunked = "chunked" in fields.get("transfer-encoding", "").lower()

    def _data(self) -> Iterator[bytes]:
        if self.chunked:
            yield from self.exchange.chunks()
            return
        while data := self.exchange.reader.read1(65536):  # until the server closes the connection
            yield data

    def __iter__(self) -> Iterator[dict[str, Any]]:
        pending = b""
        for data in self._data():
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line.strip():
                    yield orjson.loads(line)
        if pending.strip():
            yield orjson.loads(pending)

    def shutdown(self) -> None:
        self.exchange.shutdown()

    def close(self) -> None:
        self.exchange.close()


def _cause(exc: BaseException) -> str:
    """The innermost reason of a connection error (urllib3's wrap others), in a few words."""
    reason: BaseException = exc
    while isinstance(getattr(reason, "reason", None), BaseException):
        reason = reason.reason  # type: ignore[attr-defined]
    verify = getattr(reason, "verify_message", None)  # ssl: why the certificate was refused
    text = f"certificate verify failed: {verify}" if verify else str(reason)
    if "Connection refused" in text:
        return "connection refused"
    return text


def quote_name(name: str) -> str:
    """A name as a path segment."""
    return quote(name, safe="")
