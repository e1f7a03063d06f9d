"""ZooKeeper's client protocol frame by frame, for tests that send what
kazoo and Curator never send on their own: 4-byte big-endian lengths, jute
records (docs/zookeeper-compat.md), one socket per session."""

import socket
import struct

OP = {"create": 1, "delete": 2, "exists": 3, "getData": 4, "setData": 5, "getACL": 6,
      "setACL": 7, "getChildren": 8, "sync": 9, "ping": 11, "getChildren2": 12, "check": 13, "multi": 14,
      "create2": 15, "auth": 100, "close": -11}
OPEN_ACL = [(31, "world", "anyone")]


def ustring(text):
    if text is None:
        return struct.pack(">i", -1)
    data = text.encode() if isinstance(text, str) else text
    return struct.pack(">i", len(data)) + data


def acl_list(acls):
    out = struct.pack(">i", len(acls))
    for perms, scheme, ident in acls:
        out += struct.pack(">i", perms) + ustring(scheme) + ustring(ident)
    return out


def create_body(path, data=b"", flags=0, acls=OPEN_ACL):
    return ustring(path) + ustring(data) + acl_list(acls) + struct.pack(">i", flags)


def path_watch(path, watch=False):
    return ustring(path) + struct.pack(">?", watch)


def path_version(path, version=-1):
    return ustring(path) + struct.pack(">i", version)


def set_data_body(path, data, version=-1):
    return ustring(path) + ustring(data) + struct.pack(">i", version)


def multi_body(ops):
    """ops: (op name, body bytes) pairs."""
    out = b""
    for name, body in ops:
        out += struct.pack(">i?i", OP[name], False, -1) + body
    return out + struct.pack(">i?i", -1, True, -1)


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def connect_request(session_id=0, password=b"\0" * 16, timeout_ms=6000, last_zxid=0,
                    read_only=False):
    return (struct.pack(">iqiq", 0, last_zxid, timeout_ms, session_id) + ustring(password)
            + struct.pack(">?", read_only))


class Session:
    """One connection: connect, then requests and their replies."""

    def __init__(self, address, session_id=0, password=b"\0" * 16, timeout_ms=6000,
                 last_zxid=0, timeout=10.0, tls=None, prefix=b""):
        """tls: an ssl.SSLContext for a TLS port, the server's certificate
        checked for the name localhost (the tests' certificates carry it).
        prefix: bytes sent before the ConnectRequest (a follower's relay
        mark)."""
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")
        self.xid = 0
        self.sock.sendall(prefix + frame(connect_request(session_id, password, timeout_ms,
                                                         last_zxid)))
        answer = self.read_frame()
        self.connect_answer = answer
        if answer is not None:
            _, self.timeout_ms, self.session_id = struct.unpack(">iiq", answer[:16])
            (length,) = struct.unpack(">i", answer[16:20])
            self.password = answer[20:20 + length]

    def close(self):
        self.sock.close()

    def read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def read_frame(self):
        head = self.read_exact(4)
        if head is None:
            return None
        (length,) = struct.unpack(">i", head)
        return self.read_exact(length)

    def send(self, op, body=b"", xid=None):
        if xid is None:
            self.xid += 1
            xid = self.xid
        self.sock.sendall(frame(struct.pack(">ii", xid, OP[op] if isinstance(op, str) else op)
                                + body))
        return xid

    def reply(self):
        """(xid, zxid, err, body bytes), or None at the end of the stream."""
        data = self.read_frame()
        if data is None:
            return None
        xid, zxid, err = struct.unpack(">iqi", data[:16])
        return xid, zxid, err, data[16:]

    def call(self, op, body=b""):
        self.send(op, body)
        return self.reply()

    def at_eof(self, timeout=10.0):
        """True once the server closed the connection (no more bytes)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def read_ustring(data, at=0):
    (length,) = struct.unpack(">i", data[at:at + 4])
    if length < 0:
        return None, at + 4
    return data[at + 4:at + 4 + length], at + 4 + length


STAT = struct.Struct(">qqqqiiiqiiq")
STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
               "ephemeralOwner", "dataLength", "numChildren", "pzxid")


def read_stat(data, at=0):
    return dict(zip(STAT_FIELDS, STAT.unpack(data[at:at + STAT.size]))), at + STAT.size


def four_letter(address, word, timeout=10.0):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(word.encode())
        out = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return out.decode()
            out += chunk
