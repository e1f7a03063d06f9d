"""Helpers shared by the integration tests that need more than tenure_testlib's DevServer:
a server process that can be killed (SIGKILL or SIGTERM) and restarted on the same data
dir and ports, a keep-alive HTTP client that reports every status code, raw-socket
requests for malformed input, and a few assertions used by several test files.

Only the standard library: Debian's /usr/bin/python3 runs these tests (tests/CMakeLists.txt).
The binary comes from $TENURE_BIN, else build/src/tenure in the repository.
"""

import http.client
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import weakref

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# How long a fresh server may take to elect itself and answer (raft_init probes the data
# dir, which alone takes up to ~200 ms; a restart replays the log).
START_TIMEOUT_S = 30.0
# How long a graceful SIGTERM may take before we call it a hang.
STOP_TIMEOUT_S = 15.0


def tenure_bin():
    path = os.environ.get("TENURE_BIN") or os.path.join(REPO_ROOT, "build", "src", "tenure")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RuntimeError("tenure binary not found at %r (set TENURE_BIN)" % path)
    return path


def free_port():
    """A loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


try:  # the shared helper (tests/lib), when it is on PYTHONPATH
    from tenure_testlib import poll_until  # noqa: F401 - re-exported
except ImportError:  # pragma: no cover - same contract, for running without tests/lib
    def poll_until(predicate, timeout=10.0, interval=0.05, message=None):
        """Calls predicate() until it returns a truthy value (returned); exceptions count as
        "not yet"; AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last_error = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
            except Exception as error:  # noqa: BLE001
                last_error = error
            if time.monotonic() >= deadline:
                detail = " (last error: %r)" % last_error if last_error else ""
                raise AssertionError("%s not met within %ss%s"
                                     % (message or "condition", timeout, detail))
            time.sleep(interval)


# --- HTTP --------------------------------------------------------------------------------

class Response:
    """status, headers (lower-cased name -> last value), header_list, body (bytes)."""

    def __init__(self, status, header_list, body, elapsed_s=0.0):
        self.status = status
        self.header_list = header_list
        self.headers = {k.lower(): v for k, v in header_list}
        self.body = body
        self.elapsed_s = elapsed_s

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<Response %d %r %r>" % (self.status, self.headers, self.body[:300])


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects transparently for the next request
    after the server closed it. Never retries a request itself: a caller that gets an
    exception does not know whether the request took effect."""

    def __init__(self, host, port, timeout_s=10.0):
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None, timeout_s=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port,
                                                   timeout=timeout_s or self.timeout_s)
        else:
            self.conn.timeout = timeout_s or self.timeout_s
            if self.conn.sock is not None:
                self.conn.sock.settimeout(self.conn.timeout)
        if isinstance(body, str):
            body = body.encode()
        hdrs = dict(headers or {})
        if body is None and method in ("PUT", "POST", "DELETE"):
            hdrs.setdefault("Content-Length", "0")
        start = time.monotonic()
        try:
            self.conn.request(method, path, body=body, headers=hdrs)
            resp = self.conn.getresponse()
            data = resp.read()
        except Exception:
            self.close()
            raise
        elapsed = time.monotonic() - start
        if resp.will_close:
            self.close()
        return Response(resp.status, resp.getheaders(), data, elapsed)


def request(addr, method, path, body=None, headers=None, timeout_s=10.0):
    """One request on a fresh connection. addr is (host, port)."""
    client = Client(addr[0], addr[1], timeout_s)
    try:
        return client.request(method, path, body, headers, timeout_s)
    finally:
        client.close()


def raw_request(addr, data, timeout_s=10.0):
    """Sends bytes as they are (for requests http.client refuses to build) and reads the
    response up to the server's close or Content-Length. Returns a Response."""
    with socket.create_connection(addr, timeout=timeout_s) as s:
        s.sendall(data)
        return read_response(s, timeout_s)


# Bytes read past the end of one response (pipelining), kept for the next read_response.
_PENDING = weakref.WeakKeyDictionary()


def read_response(sock, timeout_s=10.0):
    """Reads one HTTP/1.1 response (Content-Length framed, or up to EOF) from sock. Bytes
    of a following pipelined response are kept for the next call on the same socket."""
    sock.settimeout(timeout_s)
    buf = _PENDING.pop(sock, b"")
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed before a full response head: %r" % buf)
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    header_list = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        header_list.append((name.strip(), value.strip()))
    length = None
    for name, value in header_list:
        if name.lower() == "content-length":
            length = int(value)
    if length is None:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest
    else:
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest[:length]
        if len(rest) > length:
            _PENDING[sock] = rest[length:]
    return Response(status, header_list, body)


def quote_key(key):
    return urllib.parse.quote(key, safe="/")


# --- The server process ----------------------------------------------------------------

class ServerProcess:
    """`tenure server` on loopback ports chosen once, so it can be stopped and restarted on
    the same data dir with the same addresses (the raft address is part of the stored
    configuration). dev=True runs `-dev` (a throwaway data dir) instead of -data-dir."""

    def __init__(self, data_dir=None, dev=False, extra_args=(), name="tenure", env=None):
        if not dev and data_dir is None:
            raise ValueError("data_dir or dev=True")
        self.data_dir = data_dir
        self.env = dict(os.environ, **env) if env else None
        self.dev = dev
        self.extra_args = list(extra_args)
        self.http_port = free_port()
        self.raft_port = free_port()
        while self.raft_port == self.http_port:
            self.raft_port = free_port()
        self.host = "127.0.0.1"
        self.proc = None
        self.starts = 0
        log_dir = tempfile.mkdtemp(prefix="tenure-test-log-")
        self.log_path = os.path.join(log_dir, name + ".log")

    @property
    def addr(self):
        return (self.host, self.http_port)

    @property
    def http_addr(self):
        return "%s:%d" % self.addr

    @property
    def raft_addr(self):
        return "%s:%d" % (self.host, self.raft_port)

    @property
    def base_url(self):
        return "http://" + self.http_addr

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def argv(self):
        argv = [tenure_bin(), "server"]
        argv += ["-dev"] if self.dev else ["-data-dir", self.data_dir]
        argv += ["-http-addr", self.http_addr, "-raft-addr", self.raft_addr]
        return argv + self.extra_args

    def start(self, timeout_s=START_TIMEOUT_S):
        if self.alive():
            raise RuntimeError("already running (pid %d)" % self.proc.pid)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(("\n=== start #%d: %s\n" % (self.starts, " ".join(self.argv()))).encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + timeout_s
        last_error = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("tenure server exited with %s during start; log:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            try:
                r = request(self.addr, "GET", "/v1/status/leader", timeout_s=2.0)
                if r.status == 200 and r.json():
                    return self
                last_error = r
            except (OSError, http.client.HTTPException, ValueError) as e:
                last_error = e
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("tenure server did not elect itself within %.0f s (%r); log:\n%s"
                           % (timeout_s, last_error, self.log_tail()))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL and reap. Returns the exit status (negative signal number)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(timeout=STOP_TIMEOUT_S)

    def stop(self, timeout_s=STOP_TIMEOUT_S):
        """SIGTERM and wait; SIGKILL (and raise) if it does not exit in time."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("tenure server ignored SIGTERM for %.0f s; log:\n%s"
                               % (timeout_s, self.log_tail()))

    def close(self):
        """Best-effort shutdown for tearDown paths: never raises. Removes the log directory
        unless $TENURE_KEEP_LOGS is set (failure messages already carry the log's tail)."""
        try:
            self.stop()
        except Exception:  # noqa: BLE001 - cleanup must not mask the test's own failure
            try:
                self.kill()
            except Exception:  # noqa: BLE001
                pass
        if not os.environ.get("TENURE_KEEP_LOGS"):
            shutil.rmtree(os.path.dirname(self.log_path), ignore_errors=True)

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError as e:
            return "(no log: %s)" % e

    def client(self, timeout_s=10.0):
        return Client(self.host, self.http_port, timeout_s)

    def request(self, method, path, body=None, headers=None, timeout_s=10.0):
        return request(self.addr, method, path, body, headers, timeout_s)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


class DevServerAdapter:
    """tenure_testlib.DevServer (the project's shared fixture) behind ServerProcess's
    interface, so tests can take either. Requests go through this module's client (it
    returns Response, which keeps repeated headers and timing)."""

    def __init__(self, extra_args=(), name="tenure"):
        import tenure_testlib
        self.dev = tenure_testlib.DevServer(extra_args=list(extra_args))
        self.name = name

    def start(self):
        self.dev.start()
        return self

    @property
    def proc(self):
        return self.dev.process

    @property
    def pid(self):
        return self.dev.process.pid if self.dev.process else None

    @property
    def addr(self):
        host, port = self.dev.http_addr.rsplit(":", 1)
        return (host, int(port))

    @property
    def host(self):
        return self.addr[0]

    @property
    def http_port(self):
        return self.addr[1]

    @property
    def http_addr(self):
        return self.dev.http_addr

    @property
    def raft_addr(self):
        return self.dev.raft_addr

    @property
    def base_url(self):
        return self.dev.url

    def alive(self):
        return self.dev.process is not None and self.dev.process.poll() is None

    def kill(self):
        return self.dev.kill()

    def stop(self, timeout_s=STOP_TIMEOUT_S):
        return self.dev.stop(timeout=timeout_s)

    def close(self):
        try:
            self.dev.close()
        except Exception:  # noqa: BLE001 - cleanup must not mask the test's own failure
            pass

    def log_tail(self, lines=40):
        return "\n".join(self.dev.log().splitlines()[-lines:])

    def client(self, timeout_s=10.0):
        return Client(self.host, self.http_port, timeout_s)

    def request(self, method, path, body=None, headers=None, timeout_s=10.0):
        return request(self.addr, method, path, body, headers, timeout_s)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


def dev_server(extra_args=(), name="tenure"):
    """A not yet started `tenure server -dev`: tenure_testlib's DevServer when tests/lib is
    on PYTHONPATH (as under ctest), else this module's ServerProcess."""
    if importlib.util.find_spec("tenure_testlib") is None:
        return ServerProcess(dev=True, extra_args=extra_args, name=name)
    return DevServerAdapter(extra_args=extra_args, name=name)


def assert_server_healthy(testcase, server, what=""):
    """The process is alive and answers /v1/status/leader with a leader."""
    testcase.assertTrue(server.alive(), "tenure server died %s; log:\n%s"
                        % (what, server.log_tail()))
    r = server.request("GET", "/v1/status/leader", timeout_s=5.0)
    testcase.assertEqual(r.status, 200, r)
    testcase.assertTrue(r.json(), "no leader %s: %r" % (what, r))


def check_server_healthy(server, what=""):
    """assert_server_healthy for places without a TestCase (tearDownClass)."""
    if not server.alive():
        proc = server.proc
        raise AssertionError("tenure server died %s (exit %s); log:\n%s"
                             % (what, proc.returncode if proc else None, server.log_tail()))
    r = server.request("GET", "/v1/status/leader", timeout_s=5.0)
    if r.status != 200 or not r.json():
        raise AssertionError("/v1/status/leader %s: %r" % (what, r))


# --- Small API helpers used by several files -------------------------------------------

def create_session(server, body=None, client=None):
    """PUT /v1/session/create; returns the id (asserts 200)."""
    payload = None if body is None else json.dumps(body)
    r = (client or server).request("PUT", "/v1/session/create", payload)
    if r.status != 200:
        raise AssertionError("session create %r -> %r" % (body, r))
    return r.json()["ID"]


def session_info(server, sid):
    r = server.request("GET", "/v1/session/info/" + sid)
    if r.status != 200:
        raise AssertionError("session info %s -> %r" % (sid, r))
    entries = r.json()
    return entries[0] if entries else None


def get_entry(server, key):
    """The KV entry dict, or None on 404."""
    r = server.request("GET", "/v1/kv/" + quote_key(key))
    if r.status == 404:
        return None
    if r.status != 200:
        raise AssertionError("GET %s -> %r" % (key, r))
    return r.json()[0]
