"""FaultProxy: a small HTTP/1.1 reverse proxy that injects faults, for tests.

Standard library only. It listens on 127.0.0.1 (a free port the OS picks) and
forwards every request to one upstream address (a tenure server's http_addr),
unless a fault is active, in which case it answers the request itself with an
HTTP 500 like a Consul server whose RPC failed, drops the connection, or
never answers.

    from fault_proxy import FaultProxy

    with FaultProxy(server.http_addr) as proxy:
        run_client_against(proxy.http_addr)
        proxy.fail_all(3.0)                           # every request: 500, for 3 s
        proxy.set_faults(error_fraction=0.5, duration=10.0)  # every other request
        proxy.set_faults(drop_fraction=0.5)            # until clear_faults()
        proxy.set_faults(hang_fraction=1.0, duration=3.0,     # renewals get no answer
                         match=lambda method, path: path.startswith("/v1/session/renew/"))
        proxy.clear_faults()
        renewals = proxy.events(lambda e: e.is_renew and e.status == 200)

Faults
  set_faults(error_fraction, drop_fraction, hang_fraction, duration=None,
             pattern="alternate", match=None, body=...) replaces the current
  fault setting. Each request that ARRIVES while the setting is active (from
  the call until `duration` seconds later; None = until clear_faults) and is
  selected by `match(method, path)` (default: all requests) is faulted with
  probability error_fraction (HTTP 500), drop_fraction (the connection is
  closed after the request was read, without a byte of answer: a transport
  error to the client) or hang_fraction (never answered: the connection stays
  open until the client gives up, like a black-holed server; such a request
  stays "hung" even after the setting ends). The three add up to <= 1.
  pattern="alternate" (the default) is deterministic: per request class
  (method + path without the query, so each session's renewals form one
  class, a key's blocking reads another) the faults are spread evenly with an
  error-diffusion counter: 0.5 fails every second request of the class, 1.0
  all of them, 0.25 every fourth, always starting with the class's first
  request; with several kinds, the faulted requests are spread between them
  in proportion the same way (drop, then hang, then 500 when a counter is
  due). So a 50% fault never fails the same class twice in a row, which is
  what makes a test that rides through it deterministic. pattern="random"
  draws each request independently from a random.Random(seed).
  The decision is made when the request has been read; a request already
  forwarded (e.g. a parked blocking query) is not affected by a later fault.
  The 500's body defaults to Consul's text for a failed RPC,
  "rpc error making call: EOF (injected by fault_proxy)" (it must not contain
  "invalid session", which clients treat as a lost session).

Consul mode
  FaultProxy(upstream, hide_tenure_extensions=True) removes what only tenure
  sends (the X-Tenure-Fence header and the "Fence" field of KV entries), so a
  client behind it sees the answers a real Consul would give.

Forwarding
  One thread per client connection, so a long-poll blocking query (GET
  ...?index=N&wait=...) parked upstream never blocks other requests. Client
  connections are kept alive (HTTP/1.1 default; "Connection: close" and
  HTTP/1.0 without keep-alive are honoured). Request bodies must have a
  Content-Length (chunked requests get 501 and the connection is closed).
  Each forwarded request uses a fresh upstream connection (so a restarted
  upstream never leaves the proxy with a stale socket); the upstream answer
  is read whole and sent back with a Content-Length, never chunked, with
  hop-by-hop headers removed. When the upstream cannot be reached or fails
  before answering (refused, reset, EOF: e.g. the server is down or
  restarting), the client connection is closed without an answer, which the
  client sees as the transport error it would have got talking directly.

Record
  events() lists one Event per request, in arrival order: method, target,
  path, outcome ("forwarded", "error500", "dropped", "hung", "upstream-error";
  None while in flight), status (the upstream's for "forwarded", 500 for
  "error500", None else) and time.monotonic() stamps: arrived (request
  read), forwarded (just before the first byte went upstream; None if not
  forwarded) and finished (None while in flight). CLOCK_MONOTONIC is
  system-wide, so the stamps compare with time.monotonic() read in other
  processes (libtenure's lease clock, CLOCK_BOOTTIME, runs at the same rate
  unless the machine is suspended).
  Event.is_renew tells a PUT /v1/session/renew/... request apart.
"""

import http.client
import random
import re
import socket
import threading
import time

__all__ = ["Event", "FaultProxy", "CONSUL_RPC_ERROR"]

CONSUL_RPC_ERROR = "rpc error making call: EOF (injected by fault_proxy)"

_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "content-length",
}
_MAX_HEADER_BYTES = 64 * 1024


class Event:
    """One request seen by the proxy (see the module docstring)."""

    __slots__ = ("method", "target", "path", "outcome", "status", "arrived", "forwarded",
                 "finished")

    def __init__(self, method, target, arrived):
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.outcome = None
        self.status = None
        self.arrived = arrived
        self.forwarded = None
        self.finished = None

    @property
    def is_renew(self):
        return self.method == "PUT" and self.path.startswith("/v1/session/renew/")

    def __repr__(self):
        return (f"Event({self.method} {self.target} -> {self.outcome} {self.status} "
                f"at {self.arrived:.3f})")


class _Faults:
    def __init__(self, error_fraction=0.0, drop_fraction=0.0, hang_fraction=0.0, until=None,
                 pattern="alternate", match=None, body=CONSUL_RPC_ERROR, seed=None):
        if (min(error_fraction, drop_fraction, hang_fraction) < 0
                or error_fraction + drop_fraction + hang_fraction > 1.0 + 1e-9):
            raise ValueError("fractions must be >= 0 and add up to at most 1")
        if pattern not in ("alternate", "random"):
            raise ValueError(f"unknown pattern {pattern!r}")
        self.error_fraction = error_fraction
        self.drop_fraction = drop_fraction
        self.hang_fraction = hang_fraction
        self.until = until
        self.pattern = pattern
        self.match = match
        self.body = body
        self.rng = random.Random(seed)
        self.counters = {}  # class -> [fault accumulator, drop and hang kind accumulators]

    def decide(self, method, path, now):
        """None (forward), "error500", "dropped" or "hung"."""
        total = self.error_fraction + self.drop_fraction + self.hang_fraction
        if total <= 0 or (self.until is not None and now >= self.until):
            return None
        if self.match is not None and not self.match(method, path):
            return None
        if self.pattern == "random":
            draw = self.rng.random()
            if draw < self.error_fraction:
                return "error500"
            if draw < self.error_fraction + self.drop_fraction:
                return "dropped"
            return "hung" if draw < total else None
        # A class's first request in a setting is faulted (the accumulator
        # starts full), so even a short window or a rare class is hit.
        acc = self.counters.setdefault(method + " " + path, [1.0 - total, 0.0, 0.0])
        acc[0] += total
        if acc[0] < 1.0 - 1e-9:
            return None
        acc[0] -= 1.0
        acc[1] += self.drop_fraction / total
        acc[2] += self.hang_fraction / total
        if acc[1] >= 1.0 - 1e-9:
            acc[1] -= 1.0
            return "dropped"
        if acc[2] >= 1.0 - 1e-9:
            acc[2] -= 1.0
            return "hung"
        return "error500"


class FaultProxy:
    """See the module docstring. Attributes: http_addr ("127.0.0.1:PORT"), upstream."""

    def __init__(self, upstream, upstream_timeout=600.0, seed=None, hide_tenure_extensions=False):
        self.upstream = upstream
        self.hide_tenure_extensions = hide_tenure_extensions
        self.upstream_timeout = upstream_timeout
        self.seed = seed
        self.http_addr = None
        self._lock = threading.Lock()
        self._faults = _Faults(seed=seed)
        self._events = []
        self._sockets = set()
        self._listener = None
        self._closed = False
        self._accept_thread = None

    # --- lifecycle ---------------------------------------------------------

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self._listener = listener
        self.http_addr = "127.0.0.1:%d" % listener.getsockname()[1]
        self._accept_thread = threading.Thread(target=self._accept_loop, daemon=True,
                                               name="fault-proxy-accept")
        self._accept_thread.start()
        return self

    def close(self):
        """Stops accepting and closes every open connection (client and upstream)."""
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
            self._sockets.clear()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        for sock in sockets:
            _close_quietly(sock)
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)

    # --- faults ------------------------------------------------------------

    def set_faults(self, error_fraction=0.0, drop_fraction=0.0, hang_fraction=0.0, duration=None,
                   pattern="alternate", match=None, body=CONSUL_RPC_ERROR):
        """Replaces the fault setting; see the module docstring. Returns the
        monotonic time the faults end (None: until clear_faults)."""
        until = None if duration is None else time.monotonic() + duration
        faults = _Faults(error_fraction, drop_fraction, hang_fraction, until, pattern, match,
                         body, self.seed)
        with self._lock:
            self._faults = faults
        return until

    def fail_all(self, duration=None, body=CONSUL_RPC_ERROR):
        """Every request gets an HTTP 500 for `duration` seconds (None: until cleared)."""
        return self.set_faults(error_fraction=1.0, duration=duration, body=body)

    def clear_faults(self):
        self.set_faults()

    # --- record ------------------------------------------------------------

    def events(self, predicate=None):
        """A copy of the events so far (those matching predicate, if given)."""
        with self._lock:
            events = list(self._events)
        return [e for e in events if predicate is None or predicate(e)]

    def last_event(self, predicate):
        found = self.events(predicate)
        return found[-1] if found else None

    # --- internals ---------------------------------------------------------

    def _track(self, sock):
        with self._lock:
            if self._closed:
                return False
            self._sockets.add(sock)
            return True

    def _untrack(self, sock):
        with self._lock:
            self._sockets.discard(sock)

    def _accept_loop(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._track(client):
                _close_quietly(client)
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(client,), daemon=True,
                             name="fault-proxy-conn").start()

    def _serve(self, client):
        buffer = b""
        try:
            while True:
                request, buffer = _read_request(client, buffer)
                if request is None:
                    return
                method, target, version, headers, body = request
                if headers.get("transfer-encoding", "").lower() not in ("", "identity"):
                    _send(client, 501, "Not Implemented", [], b"fault_proxy: chunked requests "
                          b"are not supported\n", keep_alive=False)
                    return
                now = time.monotonic()
                event = Event(method, target, now)
                with self._lock:
                    self._events.append(event)
                    faults = self._faults
                    fault = faults.decide(method, event.path, now)
                keep_alive = _wants_keep_alive(version, headers)
                if fault == "dropped":
                    event.outcome = "dropped"
                    event.finished = time.monotonic()
                    return
                if fault == "hung":
                    # Never answer: wait until the client gives up (or close()).
                    event.outcome = "hung"
                    while client.recv(65536):
                        pass
                    event.finished = time.monotonic()
                    return
                if fault == "error500":
                    event.outcome = "error500"
                    event.status = 500
                    _send(client, 500, "Internal Server Error",
                          [("Content-Type", "text/plain; charset=utf-8")],
                          faults.body.encode(), keep_alive)
                    event.finished = time.monotonic()
                    if not keep_alive:
                        return
                    continue
                answer = self._forward(event, method, target, headers, body)
                event.finished = time.monotonic()
                if answer is None:
                    event.outcome = "upstream-error"
                    return
                status, reason, resp_headers, resp_body = answer
                if self.hide_tenure_extensions:
                    resp_headers, resp_body = _hide_tenure_extensions(resp_headers, resp_body)
                event.outcome = "forwarded"
                event.status = status
                if method == "HEAD":
                    # No body; keep the upstream's Content-Length.
                    _send(client, status, reason, resp_headers, b"", keep_alive, head=True)
                else:
                    _send(client, status, reason,
                          [(k, v) for k, v in resp_headers if k.lower() not in _HOP_BY_HOP],
                          resp_body, keep_alive)
                if not keep_alive:
                    return
        except OSError:
            return
        finally:
            self._untrack(client)
            _close_quietly(client)

    def _forward(self, event, method, target, headers, body):
        host, port = self.upstream.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=self.upstream_timeout)
        try:
            conn.connect()
            if not self._track(conn.sock):
                return None
            sock = conn.sock
            try:
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers.items():
                    if name in _HOP_BY_HOP:
                        continue
                    conn.putheader(name, value)
                conn.putheader("Content-Length", str(len(body)))
                conn.putheader("Connection", "close")
                event.forwarded = time.monotonic()
                conn.endheaders(body if body else None)
                resp = conn.getresponse()
                data = resp.read()
                return resp.status, resp.reason, resp.getheaders(), data
            finally:
                self._untrack(sock)
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()


_FENCE_FIELD_BEFORE = re.compile(rb'\s*"Fence"\s*:\s*\d+\s*,')
_FENCE_FIELD_AFTER = re.compile(rb',\s*"Fence"\s*:\s*\d+')


def _hide_tenure_extensions(headers, body):
    """What a real Consul would answer: no X-Tenure-Fence header, no "Fence" field."""
    headers = [(k, v) for k, v in headers if k.lower() != "x-tenure-fence"]
    body = _FENCE_FIELD_AFTER.sub(b"", _FENCE_FIELD_BEFORE.sub(b"", body))
    return headers, body


def _close_quietly(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _wants_keep_alive(version, headers):
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    if version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def _read_request(sock, buffer):
    """(method, target, version, headers (lower-case names), body), rest of buffer;
    (None, b"") when the client closed the connection or sent garbage."""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > _MAX_HEADER_BYTES:
            return None, b""
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buffer += chunk
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None, b""
    method, target, version = parts
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return None, b""
        name = name.strip().lower()
        value = value.strip()
        headers[name] = headers[name] + ", " + value if name in headers else value
    try:
        length = int(headers.get("content-length", "0") or "0")
    except ValueError:
        return None, b""
    while len(buffer) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buffer += chunk
    return (method, target, version, headers, buffer[:length]), buffer[length:]


def _send(sock, status, reason, headers, body, keep_alive, head=False):
    lines = ["HTTP/1.1 %d %s" % (status, reason or "")]
    for name, value in headers:
        if head and name.lower() in ("connection", "keep-alive", "transfer-encoding"):
            continue
        lines.append("%s: %s" % (name, value))
    if not head:
        lines.append("Content-Length: %d" % len(body))
    lines.append("Connection: " + ("keep-alive" if keep_alive else "close"))
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
