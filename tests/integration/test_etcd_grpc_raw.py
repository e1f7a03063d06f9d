"""etcd's gRPC transport on `tenure server -grpc-addr`, driven frame by frame
with python3-h2 (decision 0048 sections 5 and 9): what etcdctl and Go's
clientv3 never send on their own.

`grpc-timeout` deadlines (a Watch call past its deadline ends
DeadlineExceeded; a malformed one is refused as grpc-go refuses it); a
Watch whose client ended its side goes on and still gets events (etcd's
recvLoop; grpc-gateway relies on it); a method that does not exist answers
Unimplemented; a malformed request message answers InvalidArgument and
changes nothing; a Lock still waiting when its deadline passes gives its
key back.
"""

import base64
import json
import socket
import struct
import time
import unittest

import h2.config
import h2.connection
import h2.events

from etcd_testlib import EtcdDevServerCase
from tenure_testlib import http_request, poll_until


def grpc_frame(message):
    return b"\0" + struct.pack(">I", len(message)) + message


def field(number, wire_type, payload):
    """One protobuf field (varints for type 0, length-delimited for type 2)."""
    def varint(value):
        out = b""
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out += bytes([byte | 0x80])
            else:
                return out + bytes([byte])
    key = varint(number << 3 | wire_type)
    if wire_type == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def watch_create(key, start_revision=0):
    create = field(1, 2, key) + (field(3, 0, start_revision) if start_revision else b"")
    return field(1, 2, create)


class GrpcCall:
    """One gRPC call on its own HTTP/2 connection."""

    def __init__(self, address, path, headers=(), timeout=10.0):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(self.stream, [
            (":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", address), ("content-type", "application/grpc"), ("te", "trailers"),
            *headers])
        self.flush()
        self.data = b""
        self.headers = None
        self.trailers = None
        self.reset = None

    def flush(self):
        self.sock.sendall(self.conn.data_to_send())

    def send(self, message, end=False):
        self.conn.send_data(self.stream, grpc_frame(message), end_stream=end)
        self.flush()

    def end(self):
        self.conn.end_stream(self.stream)
        self.flush()

    def pump(self, until, timeout=10.0):
        """Reads frames until until() holds or the deadline passes."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no answer in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed")
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    self.headers = dict(event.headers)
                elif isinstance(event, h2.events.TrailersReceived):
                    self.trailers = dict(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    self.data += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length,
                                                        event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.reset = event.error_code
            self.flush()

    def status(self):
        """grpc-status and grpc-message once the call ended (trailers, or
        a trailers-only answer's headers)."""
        self.pump(lambda: self.trailers is not None
                  or (self.headers is not None and b"grpc-status" in self.headers))
        ending = self.trailers if self.trailers is not None else self.headers
        return int(ending[b"grpc-status"]), ending.get(b"grpc-message", b"").decode()

    def messages(self):
        out, rest = [], self.data
        while len(rest) >= 5:
            length = struct.unpack(">I", rest[1:5])[0]
            if len(rest) < 5 + length:
                break
            out.append(rest[5:5 + length])
            rest = rest[5 + length:]
        return out

    def close(self):
        self.sock.close()


class EtcdGrpcRawTest(EtcdDevServerCase):

    def call(self, path, headers=()):
        call = GrpcCall(self.etcd_addr, path, headers)
        self.addCleanup(call.close)
        return call

    def put(self, key, value):
        body = json.dumps({"key": base64.b64encode(key).decode(),
                           "value": base64.b64encode(value).decode()})
        resp = http_request(self.etcd_addr, "POST", "/v3/kv/put", body)
        self.assertEqual(resp.status, 200, resp.text)

    def test_a_watch_past_its_deadline_ends_deadline_exceeded(self):
        call = self.call("/etcdserverpb.Watch/Watch", [("grpc-timeout", "300m")])
        call.send(watch_create(b"deadline-key"))
        started = time.monotonic()
        self.assertEqual(call.status(), (4, "context deadline exceeded"))
        self.assertGreaterEqual(time.monotonic() - started, 0.2)
        self.assertEqual(len(call.messages()), 1)  # the created answer came first

    def test_a_malformed_timeout_is_refused(self):
        call = self.call("/etcdserverpb.KV/Range", [("grpc-timeout", "soon")])
        code, message = call.status()
        self.assertEqual(code, 13)
        self.assertIn("malformed grpc-timeout", message)

    def test_a_watch_goes_on_after_its_client_ends_its_side(self):
        call = self.call("/etcdserverpb.Watch/Watch")
        call.send(watch_create(b"half-closed"), end=True)
        call.pump(lambda: len(call.messages()) >= 1)
        self.put(b"half-closed", b"v1")
        call.pump(lambda: len(call.messages()) >= 2)
        self.assertIn(b"half-closed", call.messages()[1])
        self.assertIn(b"v1", call.messages()[1])
        self.assertIsNone(call.trailers)

    def test_an_unknown_method_answers_unimplemented(self):
        call = self.call("/etcdserverpb.KV/Nothing")
        call.end()
        code, message = call.status()
        self.assertEqual(code, 12)
        self.assertIn("Nothing", message)

    def test_a_malformed_watch_request_answers_invalid_argument(self):
        call = self.call("/etcdserverpb.Watch/Watch")
        call.send(b"\x0a\xff\xff\xff\xff\x0f")  # a length past the message
        code, message = call.status()
        self.assertEqual(code, 3)
        self.assertIn("unmarshalling", message)

    def test_a_lock_past_its_deadline_gives_its_key_back(self):
        def grant():
            resp = http_request(self.etcd_addr, "POST", "/v3/lease/grant", '{"TTL": 30}')
            self.assertEqual(resp.status, 200, resp.text)
            return int(resp.json()["ID"])

        def lock_request(lease):
            return field(1, 2, b"raw-lock") + field(2, 0, lease)

        holder, waiter = grant(), grant()
        held = self.call("/v3lockpb.Lock/Lock")
        held.send(lock_request(holder), end=True)
        self.assertEqual(held.status(), (0, ""))
        key = base64.b64encode(f"raw-lock/{waiter:x}".encode()).decode()

        def waiter_key_exists():
            resp = http_request(self.etcd_addr, "POST", "/v3/kv/range", json.dumps({"key": key}))
            self.assertEqual(resp.status, 200, resp.text)
            return "kvs" in resp.json()
        waiting = self.call("/v3lockpb.Lock/Lock", [("grpc-timeout", "3S")])
        waiting.send(lock_request(waiter), end=True)
        poll_until(waiter_key_exists, timeout=2.5, message="the waiter's key made")
        self.assertEqual(waiting.status(), (4, "context deadline exceeded"))
        poll_until(lambda: not waiter_key_exists(), message="the waiter's key given back")


if __name__ == "__main__":
    unittest.main()
