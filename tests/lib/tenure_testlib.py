"""Shared helpers for tenure's multi-process tests (tests/integration, compat, fault)
and the Python benchmarks (bench/).

Standard library only (no `requests`), so the tests run with Debian's
/usr/bin/python3. ctest puts this directory on PYTHONPATH and sets TENURE_BIN
to the built `tenure` binary.

    from tenure_testlib import DevServer, poll_until

    with DevServer() as server:              # a one-node server on free ports
        resp = server.request("PUT", "/v1/kv/a", b"x")
        assert resp.status == 200 and resp.json() is True
        proc = server.cli("kv", "get", "a")  # runs `tenure kv get a` against it
        assert proc.stdout == "x\n"
        poll_until(lambda: server.get_json("/v1/kv/a")[0]["ModifyIndex"] > 0)

DevServer gives each server its own data directory (removed on exit unless
keep_data=True, or given with data_dir=) and writes the server's stdout/stderr
to a log file whose text is appended to startup errors, so a failing test shows
why. A server can be stopped gracefully (stop), killed (kill, SIGKILL) and
started again on the same ports and data directory (start), for restart and
crash tests. dev=False starts it as an operator would (`-data-dir` without
`-dev`); http_addr/raft_addr fix its addresses, e.g. to start a server on a
data directory another server wrote (the raft address is part of the stored
configuration). argv() is its command line, for a test that runs it itself.
check_healthy, create_session and kv_entry are small assertions and API calls
several test files share.

Talking HTTP: http_request (a connection per request), Client (one keep-alive
connection, for streams of requests), and for bytes http.client refuses to
build, connect/raw_request/read_response on a plain socket. All return
HttpResponse and never raise for 4xx/5xx statuses. quote_key percent-encodes a
KV key for a URL path.

Cli(http_addr) runs client subcommands against any agent address (a cluster
member, a stub server); DevServer.cli/popen_cli are shortcuts for its own.
Cluster(n) runs n servers bootstrapped together.

Poll with deadlines (poll_until) instead of sleeping: a test that sleeps and
hopes is a flaky test.
"""

import http.client
import json
import os
import re
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import weakref

__all__ = [
    "Cli",
    "Client",
    "Cluster",
    "DevServer",
    "FairWaiter",
    "SharedServerTestCase",
    "HttpResponse",
    "connect",
    "free_port",
    "one_address_load_args",
    "http_request",
    "pid_alive",
    "poll_until",
    "queue_of",
    "quote_key",
    "raw_request",
    "read_response",
    "tenure_bin",
]


def tenure_bin():
    """The tenure binary under test: $TENURE_BIN (set by ctest)."""
    path = os.environ.get("TENURE_BIN")
    if not path:
        raise RuntimeError("TENURE_BIN is not set; run the tests through ctest or export it")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"TENURE_BIN={path} is not an executable file")
    return path


_PER_CLIENT_FLAG = "-http-max-conns-per-client"
_knows_per_client_flag = {}


def one_address_load_args(binary=None):
    """Flags for a server that one load generator drives from one address with
    more connections than a client address may hold (200 by default,
    docs/limits.md): the per-client limit off, as Consul load tests raise
    limits.http_max_conns_per_client. Nothing for a binary older than the
    flag, which has no such limit (side-by-side benchmarks)."""
    binary = binary or tenure_bin()
    if binary not in _knows_per_client_flag:
        out = subprocess.run([binary, "server", "-h"], capture_output=True, text=True,
                             timeout=30)
        _knows_per_client_flag[binary] = _PER_CLIENT_FLAG in out.stdout + out.stderr
    return [_PER_CLIENT_FLAG, "0"] if _knows_per_client_flag[binary] else []


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


# Ports this process has handed out. A port is only bound later, by the
# server it is meant for, so without this two calls in a row (a cluster's
# raft ports, then an HTTPS port) could return the same free port.
_handed_out_ports = set()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago and that this process
    has not handed out before. Picked below the kernel's ephemeral range, so
    that no outgoing connection (a raft dial, a client) can take it as its
    source port before the server binds it, as one picked by the OS could."""
    low, _ = _ephemeral_range()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        if port in _handed_out_ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out_ports.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range after 200 tries")


def stop_quietly(client):
    """Stops and closes a kazoo client at a test's end (addCleanup), whatever
    state the test left it in (stopped already, its server gone)."""
    try:
        client.stop()
        client.close()
    except Exception:  # noqa: BLE001 - a client the test already stopped
        pass


def poll_until(predicate, timeout=10.0, interval=0.05, message=None):
    """Calls predicate() until it returns a truthy value, which is returned.

    Exceptions raised by predicate count as "not yet" (the last one is shown if
    the deadline passes). Raises AssertionError after `timeout` seconds, so a
    failing poll fails the test like an assert does.
    """
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 -- retried until the deadline
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(f"{message or 'condition'} not met within {timeout}s{detail}")
        time.sleep(interval)


class HttpResponse:
    """status (int), headers (dict, lower-case names), body (bytes), and head:
    the status line and header lines as received (bytes, without the blank
    line), when read from a socket."""

    def __init__(self, status, headers, body, head=None):
        self.status = status
        self.headers = headers
        self.body = body
        self.head = head

    @property
    def text(self):
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        return f"HttpResponse({self.status}, {self.body[:200]!r})"


def http_request(http_addr, method, path, body=None, headers=None, timeout=10.0):
    """One HTTP request to host:port on a connection of its own; never raises
    for 4xx/5xx statuses.

    body may be bytes, str or None; see Client.request. Transport errors
    (refused, timeout) raise OSError or http.client.HTTPException as
    http.client does.
    """
    with Client(http_addr, timeout) as client:
        return client.request(method, path, body, headers)


class Client:
    """One keep-alive HTTP/1.1 connection to http_addr ("host:port"), for a
    stream of requests (http_request opens a connection per request).

    After the server closed the connection (or a request failed) the next
    request opens a new one. A request is never retried: a caller that gets an
    exception does not know whether it took effect. Not thread-safe: one
    Client per thread.

        with server.client(timeout=15.0) as client:
            for i in range(100):
                assert client.request("PUT", f"/v1/kv/k{i}", b"v").body == b"true"
    """

    def __init__(self, http_addr, timeout=10.0, ssl_context=None):
        """ssl_context: speak HTTPS with it (an ssl.SSLContext) instead of HTTP."""
        host, port = http_addr.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None, timeout=None):
        """Sends one request and reads the answer; returns an HttpResponse.

        body may be bytes, str (sent as UTF-8) or None; a body-less PUT, POST
        or DELETE says Content-Length: 0 (http.client does so for PUT and POST
        only). timeout (default: the Client's) bounds connecting and each read.
        """
        timeout = timeout or self.timeout
        if self.conn is None and self.ssl_context is not None:
            self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                                    context=self.ssl_context)
        elif self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        else:
            self.conn.timeout = timeout
            if self.conn.sock is not None:
                self.conn.sock.settimeout(timeout)
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        if body is None and method in ("PUT", "POST", "DELETE"):
            headers.setdefault("Content-Length", "0")
        try:
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except Exception:
            self.close()
            raise
        if resp.will_close:
            self.close()
        return HttpResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)


def connect(http_addr, timeout=10.0):
    """A plain TCP socket connected to http_addr ("host:port"), for bytes
    http.client will not send (see raw_request, read_response)."""
    host, port = http_addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def raw_request(http_addr, data, timeout=10.0):
    """Sends data (bytes) as they are on a new connection, for malformed
    requests http.client refuses to build, and reads one response (see
    read_response). ConnectionError if the server closes the connection
    without answering."""
    with connect(http_addr, timeout) as sock:
        sock.sendall(data)
        return read_response(sock, timeout)


# Bytes read past the end of one response (pipelining), kept for the next
# read_response on the same socket.
_PENDING = weakref.WeakKeyDictionary()


def read_response(sock, timeout=10.0):
    """Reads one HTTP/1.1 response from sock: its head, then a body of
    Content-Length bytes, or up to EOF without one. Returns an HttpResponse.

    Bytes of a following pipelined response are kept for the next call on the
    same socket. Every recv waits at most `timeout` seconds (socket.timeout);
    ConnectionError if the connection closes before a whole head.
    """
    sock.settimeout(timeout)
    buf = _PENDING.pop(sock, b"")
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a full response head: {buf!r}")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    if length is None:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest
    else:
        length = int(length)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest[:length]
        if len(rest) > length:
            _PENDING[sock] = rest[length:]
    return HttpResponse(status, headers, body, head)


def quote_key(key):
    """A KV key percent-encoded for a URL path ("/" kept): /v1/kv/ + quote_key(key)."""
    return urllib.parse.quote(key, safe="/")


# The ports -dev opens by default on fixed addresses (etcd's 127.0.0.1:2379,
# ZooKeeper's 2181): test servers leave them off unless a test names them,
# so which server wins one never depends on timing.
DEV_DEFAULT_PORT_FLAGS = ("-grpc-addr", "-zk-addr")


def dev_default_ports_off(args):
    """The flags that turn off each -dev default port `args` does not name."""
    off = []
    for flag in DEV_DEFAULT_PORT_FLAGS:
        if flag not in args:
            off += [flag, "off"]
    return off


class DevServer:
    """A `tenure server -dev` on free loopback ports, as a context manager.

    Arguments:
      extra_args       more server flags, e.g. ["-session-ttl-multiplier", "1"]
      data_dir         use this directory (kept); default: a fresh temporary
                       directory, removed on exit unless keep_data=True
      startup_timeout  seconds to wait for a leader
      env              extra environment for the server process
      dev              False: no -dev flag, the server runs as an operator
                       starts one on its data dir (the only difference with
                       -data-dir given is the warning about a missing
                       -raft-key-file); for durability and recovery tests
      etcd_default     True: leave -dev's etcd and ZooKeeper ports (127.0.0.1:2379
                       and 2181 when free) as a user gets them; default:
                       "-grpc-addr off" and "-zk-addr off" unless extra_args
                       name them, so which test's server
                       happens to win port 2379 (and keeps etcd's history
                       window in memory) never depends on timing
      http_addr, raft_addr
                       fixed "127.0.0.1:PORT" addresses, e.g. those of the
                       server that wrote data_dir (its raft address is in the
                       stored configuration); default: free ports picked at
                       the first start, kept for every restart

    Attributes: http_addr ("127.0.0.1:PORT"), url ("http://127.0.0.1:PORT"),
    raft_addr, data_dir, log_path, process (the Popen while running, and
    after it exited on its own until stop/kill/close reaps it).
    """

    def __init__(self, extra_args=(), data_dir=None, keep_data=False, startup_timeout=30.0,
                 env=None, binary=None, dev=True, http_addr=None, raft_addr=None,
                 etcd_default=False):
        self.binary = binary or tenure_bin()
        self.extra_args = list(extra_args)
        if dev and not etcd_default:
            self.extra_args += dev_default_ports_off(self.extra_args)
        self.startup_timeout = startup_timeout
        self.env = dict(env or {})
        self.keep_data = keep_data
        self.dev = dev
        self.base_dir = tempfile.mkdtemp(prefix="tenure-test-")
        self.data_dir = data_dir or os.path.join(self.base_dir, "data")
        self.log_path = os.path.join(self.base_dir, "server.log")
        if (http_addr is None) != (raft_addr is None):
            raise ValueError("give both http_addr and raft_addr, or neither")
        self.http_addr = http_addr
        self.raft_addr = raft_addr
        self.process = None
        self._log_file = None

    # --- lifecycle ---------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def url(self):
        return f"http://{self.http_addr}"

    def start(self):
        """Starts the server (again, on the same ports and data dir) and waits
        for a leader; returns self.

        Free ports are picked by the OS and can be taken by someone else
        before the server binds them, so a first start on picked ports that
        fails is retried on new ones (never with fixed http_addr/raft_addr).
        """
        if self.process is not None:
            raise RuntimeError("DevServer already running")
        first_start = self.http_addr is None
        attempts = 3 if first_start else 1
        for attempt in range(attempts):
            if first_start:
                self.http_addr = f"127.0.0.1:{free_port()}"
                self.raft_addr = f"127.0.0.1:{free_port()}"
            try:
                self._spawn()
                self._wait_ready()
                return self
            except Exception:
                self._terminate(signal.SIGKILL)
                if attempt + 1 == attempts:
                    raise
        return self

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        """Stops the server with `sig` (SIGKILL after `timeout`); returns its exit code."""
        return self._terminate(sig, timeout)

    def kill(self):
        """SIGKILL: a crash; returns the exit code (-9). The data directory
        stays for a restart with start()."""
        return self._terminate(signal.SIGKILL)

    def alive(self):
        """True while the server process runs."""
        return self.process is not None and self.process.poll() is None

    def close(self):
        """Stops the server and removes the temporary files (unless keep_data)."""
        self._terminate(signal.SIGTERM)
        # base_dir holds the log and, unless the caller gave data_dir (which
        # lives elsewhere and stays), the data directory.
        if not self.keep_data:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def log(self):
        """The server's output so far (stdout and stderr interleaved; every
        start adds a "$ <command line>" line)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, lines=40):
        """The last `lines` lines of log(), for failure messages."""
        return "\n".join(self.log().splitlines()[-lines:])

    def argv(self):
        """The server's command line, for a test that runs it itself (one
        that must not start, say); needs its addresses: fixed ones, or
        those of an earlier start."""
        if self.http_addr is None:
            raise RuntimeError("no addresses yet: start() once or give http_addr/raft_addr")
        return ([self.binary, "server"] + (["-dev"] if self.dev else [])
                + ["-http-addr", self.http_addr, "-raft-addr", self.raft_addr,
                   "-data-dir", self.data_dir] + self.extra_args)

    def _spawn(self):
        os.makedirs(self.data_dir, exist_ok=True)
        cmd = self.argv()
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        self._log_file.flush()
        env = dict(os.environ)
        env.update(self.env)
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                        stderr=subprocess.STDOUT, env=env)

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise RuntimeError(f"tenure server exited with {code} during startup; log:\n"
                                   + self.log())
            try:
                resp = self.request("GET", "/v1/status/leader", timeout=2.0)
                if resp.status == 200 and resp.json():
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() >= deadline:
                raise RuntimeError(f"tenure server at {self.http_addr} had no leader within "
                                   f"{self.startup_timeout}s; log:\n" + self.log())
            time.sleep(0.05)

    def _terminate(self, sig, timeout=15.0):
        proc, self.process = self.process, None
        code = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            code = proc.returncode
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return code

    # --- talking to it -----------------------------------------------------

    def request(self, method, path, body=None, headers=None, timeout=10.0):
        """An HTTP request to this server; see http_request."""
        return http_request(self.http_addr, method, path, body, headers, timeout)

    def client(self, timeout=10.0):
        """A keep-alive Client for this server (close it, or use `with`)."""
        return Client(self.http_addr, timeout)

    def check_healthy(self, what=""):
        """AssertionError (with the log's tail) unless the process is alive and
        /v1/status/leader names a leader. what says when, for the message.
        For tearDown(Class), where there is no TestCase to assert with."""
        if not self.alive():
            code = self.process.returncode if self.process else None
            raise AssertionError(f"tenure server died {what} (exit {code}); log:\n"
                                 + self.log_tail())
        resp = self.request("GET", "/v1/status/leader", timeout=5.0)
        if resp.status != 200 or not resp.json():
            raise AssertionError(f"/v1/status/leader {what}: {resp!r}")

    def create_session(self, body=None):
        """PUT /v1/session/create with body (an object sent as JSON; None: no
        body, all defaults); returns the session id. AssertionError unless 200."""
        payload = None if body is None else json.dumps(body)
        resp = self.request("PUT", "/v1/session/create", payload)
        if resp.status != 200:
            raise AssertionError(f"session create {body!r}: {resp!r}")
        return resp.json()["ID"]

    def kv_entry(self, key):
        """The KV entry of key (a dict as GET /v1/kv/<key> lists it), or None
        on 404. AssertionError on any other status."""
        resp = self.request("GET", "/v1/kv/" + quote_key(key))
        if resp.status == 404:
            return None
        if resp.status != 200:
            raise AssertionError(f"GET {key}: {resp!r}")
        return resp.json()[0]

    def metric(self, series):
        """One sample of GET /metrics: series is the name with its labels as the
        text writes them (`name` or `name{label="value"}`). AssertionError
        unless the status is 200 and the series is there."""
        resp = self.request("GET", "/metrics")
        if resp.status != 200:
            raise AssertionError(f"GET /metrics: {resp!r}")
        for line in resp.text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
        raise AssertionError(f"no sample {series} in /metrics")

    def get_json(self, path, timeout=10.0):
        """GET path and decode the JSON body; AssertionError unless the status is 200."""
        resp = self.request("GET", path, timeout=timeout)
        if resp.status != 200:
            raise AssertionError(f"GET {path}: {resp.status} {resp.text!r}")
        return resp.json()

    def put_json(self, path, body=None, timeout=10.0):
        """PUT path (body: bytes/str, or an object sent as JSON) and decode the JSON answer."""
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        resp = self.request("PUT", path, body if body is not None else b"", timeout=timeout)
        if resp.status != 200:
            raise AssertionError(f"PUT {path}: {resp.status} {resp.text!r}")
        return resp.json()

    def cli_env(self, extra=None):
        """The environment for a client subcommand aimed at this server."""
        return Cli(self.http_addr, self.binary).env(extra)

    def cli(self, *args, **kwargs):
        """Runs `tenure <args>` against this server; see Cli.run."""
        return Cli(self.http_addr, self.binary).run(*args, **kwargs)

    def popen_cli(self, *args, **kwargs):
        """Starts `tenure <args>` against this server in the background; see Cli.popen."""
        return Cli(self.http_addr, self.binary).popen(*args, **kwargs)


class FairWaiter:
    """One parked fair acquire (PUT /v1/kv/<key>?acquire=<session>&queue,
    docs/leadership.md "The queue") on a thread of its own."""

    PARK_WAIT = "60s"  # how long it may wait on the server (far longer than any test)
    JOIN_S = 30.0  # how long answer() waits for it

    def __init__(self, http_addr, key, session, wait=PARK_WAIT, value=b""):
        self.key, self.session = key, session
        self.response = None
        self.error = None
        self.answered_at = None
        path = f"/v1/kv/{key}?acquire={session}&queue&wait={wait}"
        self.thread = threading.Thread(target=self._run, args=(http_addr, path, value),
                                       daemon=True)
        self.thread.start()

    def _run(self, http_addr, path, value):
        try:
            self.response = http_request(http_addr, "PUT", path, value, timeout=120.0)
        except Exception as error:  # noqa: BLE001 -- reported by answer()
            self.error = error
        self.answered_at = time.monotonic()

    def answered(self):
        return not self.thread.is_alive()

    def answer(self, timeout=JOIN_S):
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"{self.session} on {self.key}: no answer within {timeout}s")
        if self.error is not None:
            raise AssertionError(f"{self.session} on {self.key}: {self.error!r}")
        return self.response


def queue_of(server, key, consistent=False):
    """The sessions waiting for key, head first (GET /v1/tenure/queue/<key>).
    consistent: as the cluster committed it. A leader elected a moment ago
    serves default reads from what it has applied, which can miss entries its
    predecessor committed until it learns their commit (a few ms; Consul's
    default mode does the same)."""
    query = "?consistent" if consistent else ""
    resp = server.request("GET", f"/v1/tenure/queue/{key}{query}")
    if resp.status != 200:
        raise AssertionError(f"GET queue {key}: {resp!r}")
    return [w["Session"] for w in resp.json()]


def rss_mib(pid, field="VmRSS"):
    """A memory figure of process pid from /proc (VmRSS, VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def generate_cluster_key():
    """A new cluster key from `tenure keygen`."""
    out = subprocess.run([tenure_bin(), "keygen"], capture_output=True, text=True, timeout=30,
                         check=True)
    return out.stdout.strip()


def write_secret(directory, name, text):
    """Writes text to directory/name with mode 600 (servers refuse secret
    files others can read); returns the path."""
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    return path


class Cli:
    """Runs tenure client subcommands against the agent at http_addr (any
    server: a DevServer, a cluster member, or a stub)."""

    def __init__(self, http_addr, binary=None):
        self.http_addr = http_addr
        self.binary = binary or tenure_bin()

    def env(self, extra=None):
        """os.environ aimed at http_addr (CONSUL_/TENURE_HTTP_ADDR), without tokens or token
        files, plus extra."""
        env = dict(os.environ)
        for name in ("CONSUL_HTTP_TOKEN", "TENURE_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE",
                     "TENURE_HTTP_TOKEN_FILE"):
            env.pop(name, None)
        env["CONSUL_HTTP_ADDR"] = self.http_addr
        env["TENURE_HTTP_ADDR"] = self.http_addr
        env.update(extra or {})
        return env

    def run(self, *args, input=None, timeout=30.0, env=None):
        """Runs `tenure <args>`; returns the CompletedProcess (text mode, output captured).

        input (str) is passed on stdin; otherwise stdin is /dev/null.
        """
        return subprocess.run([self.binary, *args], input=input, capture_output=True, text=True,
                              timeout=timeout, env=self.env(env),
                              stdin=None if input is not None else subprocess.DEVNULL)

    def popen(self, *args, env=None, **kwargs):
        """Starts `tenure <args>` in the background; a Popen with text pipes by default."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("text", True)
        return subprocess.Popen([self.binary, *args], env=self.env(env), **kwargs)


def stop_process(proc, timeout=20.0):
    """Ends a process this test started (a Popen): SIGTERM, then SIGKILL after
    `timeout`; does nothing if it already exited. Returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def pid_alive(pid):
    """True while pid exists and is not a zombie (a zombie cannot act)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class SharedServerTestCase(unittest.TestCase):
    """One DevServer for the whole class (self.server, started with
    server_args) and a fresh temporary directory per test (self.dir)."""

    server_args = ("-session-ttl-multiplier", "1")

    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=cls.server_args).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=f"tenure-{type(self).__name__}-")
        self.addCleanup(shutil.rmtree, self.dir, True)


class Cluster:
    """n `tenure server` processes on loopback bootstrapped together from a
    static peer list (-bootstrap-peers), each with its own data directory, as
    a context manager. members[i] is a DevServer (node id i + 1) that can be
    killed, stopped and started again with its data.

        with Cluster(3) as cluster:
            leader = cluster.leader()
            leader.request("PUT", "/v1/kv/a", b"1")
            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
    """

    def __init__(self, n=3, extra_args=("-session-ttl-multiplier", "1"), startup_timeout=30.0,
                 proxy=None, keyed=True, secrets=True):
        """proxy: a raft_proxy.PartitionProxy to put between the members'
        raft ports (each listens on -raft-bind-addr and advertises the
        proxy's port), so that a test can cut links between them.

        keyed: members share a cluster key (-raft-key-file, made with
        `tenure keygen`), as production clusters do (docs/security.md); False
        runs them without one. Every member also gets the same operator
        token (-operator-token-file): cluster.operator_token, and
        cluster.operator_headers() for requests that need it.

        secrets=False passes neither flag (a binary from before decision 0012,
        which has neither, for side-by-side benchmarks)."""
        self.secrets_dir = tempfile.mkdtemp(prefix="tenure-cluster-")
        self.key_file = None
        self.secrets = secrets
        if keyed and secrets:
            self.key_file = write_secret(self.secrets_dir, "raft.key", generate_cluster_key())
        self.operator_token = "op-" + os.urandom(16).hex()
        self.token_file = write_secret(self.secrets_dir, "operator.token", self.operator_token)
        self.members = [DevServer(startup_timeout=startup_timeout) for _ in range(n)]
        self.proxy = proxy
        for i, member in enumerate(self.members):
            member.http_addr = f"127.0.0.1:{free_port()}"
            # Each member on its own loopback IP, which its dials leave from:
            # the proxy tells dialers apart by it when raft runs over TLS.
            member.raft_bind = (f"127.0.0.{i + 1}:{free_port()}" if proxy
                                else f"127.0.0.1:{free_port()}")
            member.raft_addr = (proxy.add_member(i + 1, member.raft_bind) if proxy
                                else member.raft_bind)
        peers = ",".join(f"{i + 1}@{m.raft_addr}" for i, m in enumerate(self.members))
        for i, member in enumerate(self.members):
            bind = ["-raft-bind-addr", member.raft_bind] if proxy else []
            # No etcd or ZooKeeper port unless asked (as DevServer: members
            # must not race for -dev's 127.0.0.1:2379 and 2181).
            member.extra_args = ["-node-id", str(i + 1), "-node", f"node{i + 1}",
                                 "-bootstrap-peers", peers, *bind, *self.secret_args(),
                                 *dev_default_ports_off(extra_args), *extra_args]

    def secret_args(self):
        """The flags that give a server this cluster's key and operator token
        (for a server that joins later)."""
        if not self.secrets:
            return []
        args = ["-operator-token-file", self.token_file]
        if self.key_file:
            args += ["-raft-key-file", self.key_file]
        return args

    def operator_headers(self):
        return {"X-Consul-Token": self.operator_token}

    def __enter__(self):
        try:
            for member in self.members:  # all first: none has a quorum alone
                member._spawn()
            for member in self.members:
                member._wait_ready()
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for member in self.members:
            member.close()
        if self.proxy is not None:
            self.proxy.close()
        shutil.rmtree(self.secrets_dir, ignore_errors=True)

    def id_of(self, member):
        return self.members.index(member) + 1

    def running(self):
        return [m for m in self.members if m.process is not None and m.process.poll() is None]

    def leader(self, timeout=30.0):
        return self.wait_leader(timeout=timeout)

    def wait_leader(self, exclude=None, timeout=30.0):
        """The running member that all running members name as leader."""
        def agreed():
            named = set()
            for member in self.running():
                resp = member.request("GET", "/v1/status/leader", timeout=2.0)
                named.add(resp.json() if resp.status == 200 else "")
            if len(named) != 1:
                return None
            (address,) = named
            for member in self.running():
                if member.raft_addr == address and member is not exclude:
                    return member
            return None
        return poll_until(agreed, timeout=timeout, interval=0.05,
                          message="the running members never agreed on a leader")


def overlaps(log, holders):
    """Why the lines `holders` holds appended to `log` ("start PID" when a
    holder got the lock, "end PID" before it let go) show two holders at
    once (or a hold missing), or None when they never overlap."""
    with open(log, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    if len(lines) != 2 * holders:
        return f"{len(lines)} lines, not {2 * holders}: {lines}"
    for i in range(0, len(lines), 2):
        start, end = lines[i].split(), lines[i + 1].split()
        if (start[0], end[0]) != ("start", "end") or start[1] != end[1]:
            return f"two holders at once: {lines}"
    return None


def walkthrough_script(doc_text):
    """The sh blocks of a page's "## Walkthrough" section, in order, as one
    script (the walkthrough tests run it as a new user would)."""
    start = doc_text.index("\n## Walkthrough")
    end = doc_text.find("\n## ", start + 1)
    section = doc_text[start:end if end != -1 else len(doc_text)]
    return "".join(re.findall(r"^```sh\n(.*?)^```$", section, re.S | re.M))
