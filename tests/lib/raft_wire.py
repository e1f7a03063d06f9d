"""A raft-port client for tests that play a stranger (tests/integration/test_raft_strangers.py).

It speaks the two layers a tenure raft connection carries, so a test can send
a member exactly the bytes an attacker would:

1. tenure's handshake, as the dialer (src/raft/wire/handshake.h is the
   grammar): hello -> challenge -> proof -> verdict, HMAC-SHA256 proofs over
   the transcript when a cluster key is given (src/raft/wire/cluster_key.h),
   zero proofs without one. Any id, addresses and purpose (raft or join).
2. libraft 0.15's messages after it (src/raft/wire/message_gate.h has the
   layout, from libraft's uv_encoding.c): AppendEntries with entries of any
   type and data, RequestVote with its flags, an InstallSnapshot header that
   declares any data size (its data is tenure_snapshot() or anything else),
   and raw bytes.

Command entries are tenure's framing (src/raft/entry_codec.h: length:u32,
payload, zero padding to 8) around a command (src/state/command.cc,
docs/formats.md: version:u8 tag:u8 fields now_ms:svarint), so a forged KvSet
is one a replica would apply if it ever reached libraft.

    conn = RaftWire.dial("127.0.0.1:8300")
    verdict = conn.handshake(key=b"...", node_id=2, raft_address="127.0.0.1:8301")
    if verdict.accepted:
        conn.send(append_entries(term=99, entries=[(ENTRY_COMMAND, kv_set_entry("k", b"v"))]))
    conn.closed_by_peer(timeout=2)

Standard library only.
"""

import base64
import hashlib
import hmac
import os
import socket
import struct
import time

__all__ = [
    "APPEND_ENTRIES", "ENTRY_BARRIER", "ENTRY_CHANGE", "ENTRY_COMMAND", "INSTALL_SNAPSHOT",
    "PURPOSE_JOIN", "PURPOSE_RAFT", "REQUEST_VOTE", "RaftWire", "Verdict", "append_entries",
    "configuration", "frame_entry", "hello_bytes", "install_snapshot_header", "kv_set_entry",
    "load_key", "message", "request_vote", "tenure_snapshot",
]

# --- handshake (src/raft/wire/handshake.h) -------------------------------------

MAGIC = b"TNRAFT1\n"
PURPOSE_RAFT = 1
PURPOSE_JOIN = 2
_KEYED_FLAG = 1
_NONCE = 32
_MAC = 32
_HELLO_FIXED = struct.Struct("<8sBBHIQ32s")        # 56 bytes, then body
_CHALLENGE_FIXED = struct.Struct("<8sBBHIQ32s32s")  # 88 bytes, then body
_LISTENER_LABEL = b"tenure raft listener\n"
_DIALER_LABEL = b"tenure raft dialer\n"


def load_key(text_or_path):
    """The secret bytes of a cluster key: `tenure keygen` text or a file holding it."""
    text = text_or_path
    if os.path.exists(text_or_path):
        with open(text_or_path, encoding="ascii") as f:
            text = f.read()
    return base64.b64decode(text.strip())


def _string(s):
    data = s.encode() if isinstance(s, str) else s
    return struct.pack("<H", len(data)) + data


def hello_bytes(node_id, raft_address="", node_name="", http_address="", purpose=PURPOSE_RAFT,
                keyed=False, nonce=None, more=()):
    """more: the strings after the HTTP address (the etcd address, then
    the ZooKeeper address; docs/formats.md)."""
    body = _string(raft_address) + _string(node_name) + _string(http_address)
    body += b"".join(_string(s) for s in more)
    return _HELLO_FIXED.pack(MAGIC, purpose, _KEYED_FLAG if keyed else 0, 0, len(body), node_id,
                             nonce or os.urandom(_NONCE)) + body


class Verdict:
    """How a handshake ended: accepted (bool), stage ("challenge", "verdict",
    "closed": where it stopped), reason (the listener's text, if it sent one),
    listener_id, rest (bytes after the verdict: a join answer)."""

    def __init__(self, accepted, stage, reason="", listener_id=0, rest=b""):
        self.accepted = accepted
        self.stage = stage
        self.reason = reason
        self.listener_id = listener_id
        self.rest = rest

    def __repr__(self):
        return f"Verdict(accepted={self.accepted}, stage={self.stage!r}, reason={self.reason!r})"


class RaftWire:
    """One TCP connection to a raft port."""

    def __init__(self, sock):
        self.sock = sock
        self._buffer = b""

    @classmethod
    def dial(cls, address, timeout=5.0):
        host, port = address.rsplit(":", 1)
        return cls(socket.create_connection((host, int(port)), timeout=timeout))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def send(self, data):
        """Sends bytes; False if the peer has already closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def _read(self, n, deadline):
        while len(self._buffer) < n:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ConnectionError):
                return None
            if not chunk:
                return None
            self._buffer += chunk
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def closed_by_peer(self, timeout=5.0):
        """True once the peer closes (EOF or reset) within `timeout`; bytes it
        sends meanwhile are read and dropped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not self.sock.recv(65536):
                    return True
            except socket.timeout:
                return False
            except ConnectionError:
                return True
        return False

    def handshake(self, key=None, node_id=2, raft_address="", node_name="stranger",
                  http_address="", purpose=PURPOSE_RAFT, pipelined=b"", timeout=5.0):
        """Plays the dialer. key: the secret bytes (load_key), or None for a
        keyless hello. pipelined: bytes sent right after the proof without
        waiting for the verdict (what an attacker does: if the listener
        wrongly accepted, they would reach the gate). Unlike tenure's dialer it
        does not give up when the listener's proof fails to verify: it sends
        its own (wrong) proof, so the listener decides."""
        deadline = time.monotonic() + timeout
        hello = hello_bytes(node_id, raft_address, node_name, http_address, purpose,
                            keyed=key is not None)
        if not self.send(hello):
            return Verdict(False, "closed")
        fixed = self._read(_CHALLENGE_FIXED.size, deadline)
        if fixed is None:
            return Verdict(False, "closed")
        magic, status, flags, _, body_len, listener_id, nonce, proof = _CHALLENGE_FIXED.unpack(fixed)
        body = self._read(body_len, deadline) if body_len else b""
        if magic != MAGIC or body is None:
            return Verdict(False, "closed")
        reason = body[2:].decode(errors="replace")
        if status != 0:
            return Verdict(False, "challenge", reason, listener_id)
        if key is not None:
            transcript = hello + _CHALLENGE_FIXED.pack(magic, status, flags, 0, body_len,
                                                        listener_id, nonce, bytes(_MAC)) + body
            mine = hmac.new(key, _DIALER_LABEL + transcript, hashlib.sha256).digest()
        else:
            mine = bytes(_MAC)
        if not self.send(mine + pipelined):
            return Verdict(False, "closed", listener_id=listener_id)
        head = self._read(3, deadline)
        if head is None:
            return Verdict(False, "closed", listener_id=listener_id)
        (length,) = struct.unpack_from("<H", head, 1)
        reason = self._read(length, deadline) if length else b""
        if reason is None:
            return Verdict(False, "closed", listener_id=listener_id)
        accepted = head[0] == 0
        rest, self._buffer = self._buffer, b""
        return Verdict(accepted, "verdict", reason.decode(errors="replace"), listener_id, rest)


# --- libraft 0.15 messages (src/raft/wire/message_gate.h) ---------------------------

ENTRY_COMMAND, ENTRY_BARRIER, ENTRY_CHANGE = 1, 2, 3
APPEND_ENTRIES, REQUEST_VOTE, INSTALL_SNAPSHOT = 1, 3, 5


def message(message_type, header, payload=b"", declared_length=None):
    """preamble (type, header length) + header + payload; declared_length
    overrides the header length the preamble states."""
    length = len(header) if declared_length is None else declared_length
    return struct.pack("<QQ", message_type, length) + header + payload


def append_entries(term=1, prev_index=0, prev_term=0, commit=0, entries=(), count=None):
    """entries: (type, data) pairs, each declared with len(data) (a size that
    is not a multiple of 8 is the caller's choice); data may be an int: that
    size is declared and no data is sent. count overrides the entry count
    the header states."""
    n = len(entries) if count is None else count
    header = struct.pack("<QQQQQ", term, prev_index, prev_term, commit, n)
    for entry_type, data in entries:
        size = data if isinstance(data, int) else len(data)
        header += struct.pack("<QB3xI", term, entry_type, size)
    header += bytes(8)  # libraft's unused "leader id"
    payload = b"".join(data for _, data in entries if not isinstance(data, int))
    return message(APPEND_ENTRIES, header, payload)


def request_vote(term, candidate, last_index=0, last_term=0, disrupt_leader=False,
                 pre_vote=False):
    flags = (1 if disrupt_leader else 0) | (2 if pre_vote else 0)
    return message(REQUEST_VOTE, struct.pack("<QQQQQ", term, candidate, last_index, last_term,
                                             flags))


def configuration(servers):
    """libraft's configuration encoding: servers is [(id, address, role)]."""
    out = struct.pack("<BQ", 1, len(servers))
    for server_id, address, role in servers:
        out += struct.pack("<Q", server_id) + address.encode() + b"\0" + bytes([role])
    return out + bytes(-len(out) % 8)


def install_snapshot_header(data_len, conf, term=1, last_index=1, last_term=1, conf_index=1):
    """An InstallSnapshot's preamble and header declaring data_len bytes of
    snapshot, none of which is sent."""
    header = struct.pack("<QQQQQ", term, last_index, last_term, conf_index, len(conf)) + conf
    header += struct.pack("<Q", data_len) + bytes(8)
    return message(INSTALL_SNAPSHOT, header)


# --- tenure entries (src/raft/entry_codec.h, src/state/command.cc) ------------------

_COMMAND_VERSION = 1
_TAG_KV_SET = 1


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _bytes(data):
    data = data.encode() if isinstance(data, str) else data
    return _varint(len(data)) + data


def frame_entry(payload):
    """length:u32 payload zero padding to a multiple of 8."""
    framed = struct.pack("<I", len(payload)) + payload
    return framed + bytes(-len(framed) % 8)


def kv_set_entry(key, value, flags=0, now_ms=None):
    """A framed KvSet command: what the leader proposes for PUT /v1/kv/<key>."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    payload = (bytes([_COMMAND_VERSION, _TAG_KV_SET]) + _bytes(key) + _bytes(value)
               + _varint(flags) + _varint((now << 1) ^ (now >> 63)))
    return frame_entry(payload)


def impersonate(test, cluster, target, claimed):
    """A keyless raft connection to member `target` that claims to be member
    `claimed` (ids and addresses are public in the raft configuration); the
    test fails unless the handshake accepts it."""
    wire = RaftWire.dial(target.raft_addr)
    verdict = wire.handshake(key=None, node_id=cluster.id_of(claimed),
                             raft_address=claimed.raft_addr)
    test.assertTrue(verdict.accepted, verdict)
    return wire


# --- tenure snapshots (src/state/store_snapshot.cc, docs/formats.md) ----------------

def _crc_table():
    table = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
        table.append(c & 0xFFFFFFFF)
    return table


_CRC_TABLE = _crc_table()


def crc32(data, crc=0):
    """libraft's CRC-32, which tenure's snapshots use too (src/common/crc32.h):
    MSB first, no reflection, no final xor."""
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC_TABLE[((crc >> 24) ^ b) & 0xFF]
    return crc


def tenure_snapshot(applied_index=1, now_ms=0):
    """A valid tenure snapshot of an empty store (version 3): what a state
    machine restores without complaint, so only its raft header decides."""
    body = (b"TNRSNAP" + bytes([3]) + _varint(applied_index) + _varint(0) * 3
            + _varint((now_ms << 1) ^ (now_ms >> 63)) + bytes(5))
    return body + struct.pack("<I", crc32(body))
