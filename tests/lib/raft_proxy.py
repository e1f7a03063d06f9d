"""A partitioning proxy between raft peers (decision 0009).

Every member of a test cluster listens for raft on a private port
(`tenure server -raft-bind-addr`) and advertises a proxy port (`-raft-addr`,
the address in the raft configuration, which the other members dial). The
proxy forwards each connection to the member's private port, and reads the
dialer's hello on the way (over TLS, where the hello is encrypted, it knows
the dialer by its source IP: members bind 127.0.0.N and dial from there) (docs/formats.md, "raft handshake": a 56-byte
fixed part with body_len:u32 at offset 12 and id:u64 at offset 16,
little-endian, then body_len bytes) to learn which member dialled. After the
handshake libraft sends in one direction per connection (each server dials
its peers to send them messages), so a connection is one directed link
`from -> to`; the handshake's answers flow back on it while it is not cut.

Cutting a link `from -> to`:
  - bytes already flowing on its connections are dropped from then on
    (TCP stays up, nothing arrives: what a silent network partition does to
    a long-lived connection; no half message ever reaches libraft);
  - new connections on it are accepted and black-holed the same way;
  - on heal, those connections are closed, so both sides reconnect cleanly.

    proxy = PartitionProxy()
    a1 = proxy.add_member(1, "127.0.0.1:9001")   # -> advertised address
    ...
    proxy.isolate(1)            # 1 hears no one and no one hears 1
    proxy.cut(1, 2)             # one way: 1's messages do not reach 2
    proxy.heal()
    proxy.close()

Standard library only. Runs without privileges (unlike network namespaces),
which is why the fault tests use it.
"""

import socket
import struct
import threading

from tenure_testlib import free_port

__all__ = ["PartitionProxy"]

_MAGIC = b"TNRAFT1\n"
_HELLO_FIXED = 56
_BODY_LEN = struct.Struct("<I")  # at offset 12
_ID = struct.Struct("<Q")        # at offset 16
_TLS_HANDSHAKE_RECORD = b"\x16"  # the first byte of a TLS ClientHello


class _Link:
    """One proxied connection from member `src` to member `dst`."""

    def __init__(self, proxy, client, dst, target):
        self.proxy = proxy
        self.client = client
        self.dst = dst
        self.target = target
        self.src = None
        self.upstream = None
        self.dead = False  # dropping from now on; closed on heal
        self.closed = False

    def start(self):
        threading.Thread(target=self._run, daemon=True).start()

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.client.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed during the handshake")
            data += chunk
        return data

    def _run(self):
        try:
            first = self._recv_exact(1)
            if first == _TLS_HANDSHAKE_RECORD:
                # Raft over TLS: the hello is encrypted; the dialer is known
                # by the source address its -raft-bind-addr gave it.
                self.src = self.proxy.sources.get(self.client.getpeername()[0])
                if self.src is None:
                    raise ConnectionError("TLS from an address that is no member's")
                handshake = first
            else:
                fixed = first + self._recv_exact(_HELLO_FIXED - 1)
                if not fixed.startswith(_MAGIC):
                    raise ConnectionError("not a tenure raft hello")
                (body_len,) = _BODY_LEN.unpack_from(fixed, 12)
                (self.src,) = _ID.unpack_from(fixed, 16)
                if body_len > 4096:
                    raise ConnectionError("not a tenure raft hello")
                handshake = fixed + self._recv_exact(body_len)
            with self.proxy.lock:
                self.dead = self.proxy._blocked(self.src, self.dst)
            self.upstream = socket.create_connection(self.target, timeout=5)
            self.upstream.settimeout(None)
            self.proxy.record(handshake)
            self.upstream.sendall(handshake)
            threading.Thread(target=self._pump, args=(self.upstream, self.client, False),
                             daemon=True).start()
            self._pump(self.client, self.upstream, True)
        except OSError:
            self.close()

    def _pump(self, source, sink, forward):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if forward and self.dead:
                    continue  # the partition: swallowed
                if forward or not self.dead:
                    self.proxy.record(data)
                    sink.sendall(data)
        except OSError:
            pass
        self.close()

    def close(self):
        with self.proxy.lock:
            if self.closed:
                return
            self.closed = True
            self.proxy.links.discard(self)
        for sock in (self.client, self.upstream):
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()


class PartitionProxy:
    def __init__(self, host="127.0.0.1", record=False):
        """record: keep every byte that crosses (both directions, the first
        64 MiB) in self.recorded, to show what an eavesdropper would see."""
        self.host = host
        self.recording = record
        self.recorded = bytearray()
        self.lock = threading.Lock()
        self.cuts = set()  # (from_id, to_id)
        self.links = set()
        self.sources = {}  # a member's source IP -> its id (raft over TLS)
        self.listeners = []
        self.closing = False

    def add_member(self, member_id, bind_addr):
        """Starts the proxy port of member `member_id`, whose raft really
        listens on `bind_addr`; returns the address to advertise."""
        host, port = bind_addr.rsplit(":", 1)
        self.sources[host] = member_id  # dials leave from the bind address's IP
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, free_port()))
        listener.listen(64)
        self.listeners.append(listener)
        target = (host, int(port))
        threading.Thread(target=self._accept, args=(listener, member_id, target),
                         daemon=True).start()
        return f"{self.host}:{listener.getsockname()[1]}"

    def _accept(self, listener, member_id, target):
        while not self.closing:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            link = _Link(self, client, member_id, target)
            with self.lock:
                self.links.add(link)
            link.start()

    def record(self, data):
        if self.recording:
            with self.lock:
                if len(self.recorded) < 64 << 20:
                    self.recorded += data

    def _blocked(self, src, dst):
        return (src, dst) in self.cuts

    # --- faults --------------------------------------------------------------

    def cut(self, src, dst):
        """Messages from member `src` stop reaching member `dst`."""
        with self.lock:
            self.cuts.add((src, dst))
            for link in self.links:
                if link.src == src and link.dst == dst:
                    link.dead = True

    def cut_both(self, a, b):
        self.cut(a, b)
        self.cut(b, a)

    def isolate(self, member_id, others):
        for other in others:
            if other != member_id:
                self.cut_both(member_id, other)

    def split(self, side_a, side_b):
        for a in side_a:
            for b in side_b:
                self.cut_both(a, b)

    def heal(self):
        """Every link works again; connections that were swallowing bytes are
        closed so that libraft reconnects from a clean message boundary."""
        with self.lock:
            self.cuts.clear()
            dead = [link for link in self.links if link.dead]
        for link in dead:
            link.close()

    def reset(self, a, b):
        """Closes the connections open between members `a` and `b` (both
        directions) without blocking new ones: both ends see their sockets
        close, as after a network blip or a restart of a peer's transport."""
        with self.lock:
            doomed = [link for link in self.links if {link.src, link.dst} == {a, b}]
        for link in doomed:
            link.close()
        return len(doomed)

    def close(self):
        self.closing = True
        for listener in self.listeners:
            listener.close()
        with self.lock:
            links = list(self.links)
        for link in links:
            link.close()
