#!/usr/bin/python3
"""Writes the seeds of the http_request, http2_session, text, raft_wire, acl_rules, acl_bodies and
config_text fuzz targets:
requests of every endpoint and the bodies, durations, ids and addresses the
tests send, and raft handshakes and messages built by tests/lib/raft_wire.py
(as test_raft_strangers sends them). Binary seeds of the command and snapshot
targets come from fuzz_make_seeds (make_seeds.cc). scripts/fuzz -seeds runs
both; the output is committed in tests/fuzz/corpus.

Usage: make_seeds.py CORPUS_DIR
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import raft_wire  # noqa: E402

SESSION = "4ca8e74b-6350-7587-addf-a18084928f3c"
SESSION_BODY = ('{"Name": "dbservice", "TTL": "15s", "LockDelay": "15s", "Behavior": "release",'
                ' "Checks": [], "NodeChecks": ["serfHealth"]}')
PATRONI_BODY = '{"LockDelay": 0.001, "Behavior": "delete", "TTL": "30s", "checks": []}'
TXN_BODY = ('[{"KV": {"Verb": "lock", "Key": "svc/leader", "Value": "YWxwaGE=", "Session": "'
            + SESSION + '"}}, {"KV": {"Verb": "check-index", "Key": "a", "Index": 7}},'
            ' {"KV": {"Verb": "get-tree", "Key": "a/"}}, {"KV": {"Verb": "check-fence",'
            ' "Key": "svc/leader", "Index": 3}}, {"KV": {"Verb": "bogus"}}]')


def request(method, target, body="", headers=()):
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1:8500"]
    lines += list(headers)
    if body:
        lines.append(f"Content-Length: {len(body.encode())}")
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


def chunked(method, target, body):
    head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    half = len(body) // 2
    parts = [body[:half], body[half:]]
    chunks = "".join(f"{len(p):x}\r\n{p}\r\n" for p in parts if p)
    return (head + chunks + "0\r\n\r\n").encode()


HTTP = [
    request("GET", "/v1/kv/service/dbservice/leader"),
    request("GET", "/v1/kv/a%20b/c?recurse&keys&separator=/&index=7&wait=10s&stale"),
    request("GET", "/v1/kv/a?consistent&pretty&dc=dc1"),
    request("PUT", "/v1/kv/service/dbservice/leader?acquire=" + SESSION, '{"Node": "alpha"}'),
    request("PUT", "/v1/kv/svc/leader?release=" + SESSION + "&flags=42", "x"),
    request("PUT", "/v1/kv/a?cas=0", "value"),
    request("PUT", "/v1/kv/a?fence=3&acquire=" + SESSION, "v"),
    request("DELETE", "/v1/kv/a/?recurse"),
    request("DELETE", "/v1/kv/a?cas=9"),
    request("PUT", "/v1/txn", TXN_BODY),
    request("PUT", "/v1/session/create", SESSION_BODY),
    request("PUT", "/v1/session/create", PATRONI_BODY),
    request("PUT", "/v1/session/destroy/" + SESSION),
    request("PUT", "/v1/session/renew/" + SESSION),
    request("GET", "/v1/session/info/" + SESSION + "?index=12&wait=1m"),
    request("GET", "/v1/session/node/n1"),
    request("GET", "/v1/session/list"),
    request("GET", "/v1/status/leader"),
    request("GET", "/v1/status/peers"),
    request("GET", "/v1/agent/self"),
    request("GET", "/v1/operator/raft/configuration"),
    request("POST", "/v1/operator/raft/transfer-leader?id=2", headers=["X-Consul-Token: secret"]),
    request("DELETE", "/v1/operator/raft/peer?id=3"),
    request("PUT", "/v1/session/create", SESSION_BODY, headers=["Expect: 100-continue"]),
    chunked("PUT", "/v1/kv/chunked", "a chunked body"),
    chunked("PUT", "/v1/txn", TXN_BODY),
    b"GET /v1/kv/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"HEAD /v1/kv/a HTTP/1.1\r\n\r\n",
    b"GET http://127.0.0.1:8500/v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\n\r\n",
    b"GET /v1/kv/%zz HTTP/1.1\r\n\r\n",
    request("GET", "/v1/status/leader") + request("GET", "/v1/kv/a") + request("PUT", "/v1/kv/b", "2"),
]

TEXT = [
    (0, "15s"), (0, "1h2m3.5s"), (0, "-1.5ms"), (0, "300ms"), (0, "2562047h47m16.854775807s"),
    (0, "1.5µs"), (0, "0"), (0, "10us"), (0, ".5s"),
    (1, "18446744073709551615"), (1, "0"), (1, "042"), (1, "-1"),
    (2, "a=1&b&c=%20&d=%2F+x"), (2, "recurse&keys&separator=%2f"), (0x82, "a+b%41"),
    (3, "YWxwaGE="), (3, "Zm9vYmFy"), (3, ""),
    (4, "127.0.0.1:8300"), (4, "[::1]:8500"), (4, "node1.example:65535"), (0x84, "localhost:0"),
    (5, SESSION_BODY), (5, PATRONI_BODY), (5, '{"LockDelay": 15, "ServiceChecks": [{"ID": "x"}]}'),
    (5, ""), (5, "null"),
    (6, TXN_BODY), (6, "[]"), (6, '[{"KV": {"Verb": "set", "Key": "a", "Flags": 3}}]'),
    (7, SESSION), (7, "not-a-uuid"),
]


def raft_wire_seeds():
    hello = raft_wire.hello_bytes(2, "127.0.0.1:8301", "n2", "127.0.0.1:8501",
                                  nonce=bytes(32))
    keyed = raft_wire.hello_bytes(2, "127.0.0.1:8301", "n2", "127.0.0.1:8501", keyed=True,
                                  nonce=bytes(32))
    join = raft_wire.hello_bytes(2, "127.0.0.1:8301", "n2", "", purpose=raft_wire.PURPOSE_JOIN,
                                 nonce=bytes(32))
    # With the etcd address ("" here) and the ZooKeeper address after it.
    addresses = raft_wire.hello_bytes(2, "127.0.0.1:8301", "n2", "127.0.0.1:8501",
                                      nonce=bytes(32), more=("", "tls://127.0.0.1:2281"))
    conf = raft_wire.configuration([(1, "127.0.0.1:8300", 1), (2, "127.0.0.1:8301", 1)])
    entry = raft_wire.kv_set_entry("a", "v", now_ms=1700000000000)
    messages = (raft_wire.append_entries(entries=[(raft_wire.ENTRY_COMMAND, entry)])
                + raft_wire.request_vote(2, 2, pre_vote=True)
                + raft_wire.append_entries(term=2, prev_index=1, prev_term=1, commit=1,
                                           entries=[(raft_wire.ENTRY_BARRIER, bytes(8))]))
    snapshot = raft_wire.install_snapshot_header(16, conf) + bytes(16)
    # One the gate passes: a valid tenure snapshot as its data.
    data = raft_wire.tenure_snapshot(applied_index=7, now_ms=1700000000000)
    valid_snapshot = raft_wire.install_snapshot_header(len(data), conf, term=2, last_index=7,
                                                       last_term=2, conf_index=1) + data
    return [
        bytes([0, 255]) + hello, bytes([0, 7]) + hello + messages,
        bytes([1, 255]) + keyed, bytes([0, 255]) + join,
        bytes([2, 255]) + hello,
        bytes([3, 255]) + bytes([0]) + (0).to_bytes(8, "little") + b"\x00\x00\x00\x00",
        bytes([4, 255]) + conf,
        bytes([5, 255]) + messages, bytes([5, 3]) + messages, bytes([5, 255]) + snapshot,
        bytes([5, 255]) + valid_snapshot, bytes([5, 5]) + messages + valid_snapshot,
        bytes([0, 255]) + addresses,
    ]


# ACL rules (acl_rules): the option byte (bit 0 default allow, bit 1
# management, bit 2 the key list policy), then a policy in HCL or JSON: the
# forms docs/acl-rules.md shows, and some broken ones.
ACL_RULES = [
    (0, 'key_prefix "svc/" { policy = "write" }\nkey "svc/leader" { policy = "read" }\n'
        'session_prefix "" { policy = "write" }\noperator = "read"\n'),
    (1, '# comments\nkey_prefix "" { policy = "deny" } // all\n/* block */\n'
        'key_prefix "app/config/" { policy = "read" }\nacl = "deny"\n'),
    (4, 'key = {\n  "a" = { policy = "list" }\n  "b" { policy = "write" }\n}\n'
        'key_prefix = [{ "c/" = { policy = "list" } }, { "d/" = { policy = "deny" } }]\n'),
    (2, 'key "secret" { policy = "deny" }\nservice_prefix "" { policy = "write" intentions = '
        '"read" }\nkeyring = "write"\nmesh = "read"\n'),
    (5, 'node_prefix "web-" { policy = "write" }\nnode "web-9" { policy = "deny" }\n'
        'agent_prefix "" { policy = "read" }\nagent "ops" { policy = "write" }\n'
        'session "db1" { policy = "write" }\n'),
    (0, 'key "q\\"b\\\\\\x41\\101\\u00e9" { policy = "WRITE", }, key foo.bar { policy = "read" }\n'),
    (3, '{"key_prefix": {"svc/": {"policy": "write"}, "": {"policy": "list"}},\n'
        ' "key": [{"a": {"policy": "read"}}, {"b": {"policy": "deny"}}],\n'
        ' "session_prefix": {"": {"policy": "read"}}, "operator": "write", "acl": "read"}'),
    (6, '{"node": {"n1": [{"policy": "read"}, {"policy": "write"}]}, "agent_prefix": {"": '
        '{"policy": "write"}}, "event_prefix": {"": {"policy": "read"}}}'),
    (0, 'key "a" {\n  policy "read"\n}\n'),
    (0, 'kye "a" { policy = "read" }\n'),
    (0, 'key "a" { policy = "wirte" }\n'),
    (0, 'session "n" { policy = "list" }\n'),
    (0, 'key "a" { policy = "read"\n'),
    (0, 'key "a\n" { policy = "read" }\n'),
    (0, '{"key": {"a": {"policy": "read"}}'),
    (0, '{"key": [[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]}'),
    (0, 'namespace "x" { key "a" { policy = "read" } }\n'),
]


# ACL request bodies (acl_bodies): 0 token, 1 policy, 2 bootstrap, 3 an
# RFC 3339 time; the bodies the transcripts and Consul's clients send.
ACL_BODIES = [
    (0, '{"Description": "billing candidate", "Policies": [{"Name": "candidate"}]}'),
    (0, '{"AccessorID": "11111111-2222-3333-4444-555555555555", "SecretID": '
        '"0b5e7e00-0000-4000-8000-000000000002", "Policies": [{"ID": "x"}], "Local": true}'),
    (0, '{"ExpirationTTL": "1h", "ExpirationTime": "2030-01-01T00:00:00Z"}'),
    (0, '{"ExpirationTTL": 3600000000000, "Roles": [], "ServiceIdentities": null}'),
    (0, '{"Roles": [{"Name": "r"}]}'),
    (0, '{"Policies": [{}]}'),
    (0, '{"policies": "x", "local": "yes"}'),
    (1, '{"Name": "candidate", "Description": "one election", "Rules": '
        '"key_prefix \\"service/billing/\\" { policy = \\"write\\" }"}'),
    (1, '{"ID": "x", "Name": "n", "Datacenters": ["dc1", "dc2"]}'),
    (1, '{"Datacenters": "dc1"}'),
    (1, '[]'),
    (2, '{"BootstrapSecret": "0b5e7e00-0000-4000-8000-000000000002"}'),
    (2, '{"BootstrapSecret": 7}'),
    (2, ''),
    (3, '2023-11-14T22:13:20Z'),
    (3, '2023-11-14T23:13:20.123456789+01:00'),
    (3, '2000-02-29T00:00:00z'),
    (3, '2023-02-29T00:00:00Z'),
]


# Configuration-shaped text (config_text): the option byte (bit 0 HCL, bits
# 1-2 the config files' options, the rules', the defaults, a nesting limit
# of 2), then the config files the agent tests read and the rules above.
CONFIG_FILES = [
    (0, '{\n  "data_dir": "/var/lib/tenure",\n  "acl": {"enabled": true, "tokens": '
        '{"initial_management": "x"}},\n  "join": ["10.0.0.1:8300", "10.0.0.2:8300"],\n'
        '  "ports": {"http": 8500}, "node_id": null}\n'),
    (0, '\xef\xbb\xbf{"s": "x\\"y\\u00e9\\ud83d\\ude00", "n": -12.5e3, "b": false}'),
    (0, '{"a": 1,\n"a": 2}'),
    (0, '{"a": 01}'),
    (1, 'data_dir = "/var/lib/tenure"\nacl {\n  enabled = true\n  default_policy = "deny"\n'
        '  tokens { initial_management = "x" }\n}\nacl { enable_key_list_policy = true }\n'
        'join = ["10.0.0.1:8300", "10.0.0.2:8300",]\nports = { http = 8500 }\n'),
    (1, 'service "web" {\n}\n'),
    (1, 'data_dir = <<EOF\n/d\nEOF\n'),
    (7, 'a { b { c = [1, [2]] } }\n'),
    (6, '[[{"a": [1]}]]'),
]


def config_text_seeds():
    seeds = [bytes([opt]) + t.encode("latin-1") for opt, t in CONFIG_FILES]
    for _, text in ACL_RULES:
        form = 0 if text.lstrip().startswith("{") else 1
        seeds.append(bytes([2 | form]) + text.encode())
        seeds.append(bytes([4 | form]) + text.encode())
    return seeds


def h2_frame(kind, flags, stream, payload=b""):
    return (len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big")
            + payload)


def h2_literal(first_byte, value):
    """An HPACK field with a static-table name and a literal value: its first
    byte is the representation and the name's index (0x04: :path, not
    indexed; 0x5f: content-type, indexed)."""
    return bytes([first_byte]) + bytes([len(value)]) + value


def http2_session_seeds():
    """What clients send after the preface (the harness sends the preface):
    SETTINGS, then requests as curl and grpc-go send them, a PING, a reset,
    a window update and garbage; the first byte of each is the read size."""
    settings = h2_frame(0x4, 0, 0, bytes.fromhex("000300000064000400100000"))
    authority = h2_literal(0x01, b"localhost")  # nghttp2 refuses a request without one
    get = h2_frame(0x1, 0x5, 1, b"\x82\x86" + h2_literal(0x04, b"/v1/kv/a?recurse") + authority)
    put = (h2_frame(0x1, 0x4, 3, b"\x83\x86" + h2_literal(0x04, b"/v1/kv/a") + authority
                    + h2_literal(0x5c, b"5"))  # content-length
           + h2_frame(0x0, 0x1, 3, b"hello"))
    grpc = (h2_frame(0x1, 0x4, 5, b"\x83\x86" + h2_literal(0x04, b"/etcdserverpb.KV/Range") + authority
                     + h2_literal(0x5f, b"application/grpc")
                     + b"\x00\x02te\x08trailers")
            + h2_frame(0x0, 0x0, 5, b"\x00\x00\x00\x00\x03\x0a\x01a")
            + h2_frame(0x0, 0x1, 5, b""))
    ping = h2_frame(0x6, 0, 0, b"12345678")
    reset = h2_frame(0x1, 0x4, 7, b"\x82\x86\x84" + authority) + h2_frame(0x3, 0, 7, b"\x00\x00\x00\x08")
    window = h2_frame(0x8, 0, 0, b"\x00\x01\x00\x00")
    seeds = [settings, settings + get, settings + put, settings + grpc, settings + ping,
             settings + reset, settings + window + get + grpc, b"this is not HTTP/2",
             settings + get + h2_frame(0x7, 0, 0, b"\x00\x00\x00\x00\x00\x00\x00\x00")]
    return [bytes([255]) + s for s in seeds] + [bytes([4]) + s for s in seeds[1:5]]


def write(directory, inputs):
    os.makedirs(directory, exist_ok=True)
    for data in inputs:
        name = hashlib.sha1(data).hexdigest()  # libFuzzer's naming
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py CORPUS_DIR")
    root = sys.argv[1]
    write(os.path.join(root, "http_request"),
          [bytes([255]) + r for r in HTTP] + [bytes([6]) + r for r in HTTP[:8]])
    write(os.path.join(root, "http2_session"), http2_session_seeds())
    write(os.path.join(root, "text"), [bytes([sel]) + t.encode() for sel, t in TEXT])
    write(os.path.join(root, "raft_wire"), raft_wire_seeds())
    write(os.path.join(root, "acl_rules"), [bytes([opt]) + t.encode() for opt, t in ACL_RULES])
    write(os.path.join(root, "acl_bodies"), [bytes([sel]) + t.encode() for sel, t in ACL_BODIES])
    write(os.path.join(root, "config_text"), config_text_seeds())
    print(f"wrote http_request, http2_session, text, raft_wire, acl_rules, acl_bodies and config_text seeds under {root}")


if __name__ == "__main__":
    main()
