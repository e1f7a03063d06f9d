"""The ACL matrix for ZooKeeper's port (docs/security.md, "The ZooKeeper
port"; decision 0056 section 7): every op tenure serves by every token
kind, each cell the code ZooKeeper's answer must carry, against a real
server with -acl-enabled -acl-default-policy deny.

The token kinds (the columns), named on a connection by an auth packet
(scheme digest, `<anything>:<SecretID>`, as kazoo's auth_data sends it):
  mgmt     the -acl-initial-management secret
  anon     no auth packet: the anonymous token under default deny
  writer   write on keys under /zk/app/, read on those under /zk/
  reader   read on keys under /zk/
  fenced   read under /zk/ but a deny on /zk/secret/ (a deny prefix inside
           a read prefix)
  unknown  a random secret no token has: AUTHFAILED, the connection ends

addWatch is ok for every token, as ZooKeeper sets a persistent watch
without a check: what it may see is decided as each event goes out, which
test_a_persistent_watch_sees_only_what_its_token_may_read checks.

A cell is ok (0), noauth (NOAUTH, -102), authfailed (-115) or none
(NOWATCHER, -121: a connection sees only its own watches). Before each
cell the fixture (/zk, /zk/app, /zk/app/item = "v", /zk/secret,
/zk/secret/s) is put back by the management token, and after a refused
write the test checks that the fixture is unchanged. It prints the cells,
those that matched and the unauthorized successes (an answer of 0 where
the grid says refused), which must be 0. The grid runs twice: on the
clear-text port and on the TLS port (`-zk-tls-addr` with
-tls-verify-incoming, every connection presenting a client certificate from
the CA), where the certificate grants nothing of its own: the same token
gets the same answers. Beside the grid: kazoo with a token in auth_data
reads and writes what the token allows and nothing else.
"""

import json
import shutil
import ssl
import struct
import tempfile
import unittest
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

import zk_wire
from tenure_testlib import (Cluster, DevServer, free_port, generate_cluster_key, poll_until,
                            write_secret)
from test_pki import Pki

POLICIES = {
    "writer": 'key_prefix "/zk/app/" { policy = "write" }\n'
              'key_prefix "/zk/" { policy = "read" }',
    "reader": 'key_prefix "/zk/" { policy = "read" }',
    "fenced": 'key_prefix "/zk/" { policy = "read" }\n'
              'key_prefix "/zk/secret/" { policy = "deny" }',
}
FIXTURE = [("/zk", b""), ("/zk/app", b""), ("/zk/app/item", b"v"), ("/zk/secret", b""),
           ("/zk/secret/s", b"s")]

# Each row: the op's code and body.
ROWS = {
    "exists-item": ("exists", zk_wire.path_watch("/zk/app/item")),
    "getData-item": ("getData", zk_wire.path_watch("/zk/app/item")),
    "getData-secret": ("getData", zk_wire.path_watch("/zk/secret/s")),
    "getACL-item": ("getACL", zk_wire.ustring("/zk/app/item")),
    "getChildren-app": ("getChildren", zk_wire.path_watch("/zk/app")),
    "getChildren2-zk": ("getChildren2", zk_wire.path_watch("/zk")),
    "allChildren-zk": (104, zk_wire.ustring("/zk")),
    "create-app": ("create", zk_wire.create_body("/zk/app/new", b"n")),
    "create-eph-app": ("create", zk_wire.create_body("/zk/app/eph", b"e", flags=1)),
    "create-other": ("create", zk_wire.create_body("/zk/other", b"o")),
    "setData-item": ("setData", zk_wire.set_data_body("/zk/app/item", b"w")),
    "delete-item": ("delete", zk_wire.path_version("/zk/app/item")),
    "setACL-item": ("setACL", zk_wire.ustring("/zk/app/item") + zk_wire.acl_list(zk_wire.OPEN_ACL)
                    + struct.pack(">i", -1)),
    "multi-check-set": ("multi", zk_wire.multi_body([
        ("check", zk_wire.path_version("/zk/app/item", 0)),
        ("setData", zk_wire.set_data_body("/zk/app/item", b"m"))])),
    "check-secret-multi": ("multi", zk_wire.multi_body([
        ("check", zk_wire.path_version("/zk/secret/s", 0)),
        ("setData", zk_wire.set_data_body("/zk/app/item", b"m"))])),
    "sync": ("sync", zk_wire.ustring("/zk")),
    "ping": ("ping", b""),
    "getEphemerals": (103, zk_wire.ustring("/")),
    "whoAmI": (107, b""),
    "checkWatches-item": (17, zk_wire.ustring("/zk/app/item") + struct.pack(">i", 3)),
    "addWatch-zk": (106, zk_wire.ustring("/zk") + struct.pack(">i", 1)),
    "removeWatches-zk": (18, zk_wire.ustring("/zk") + struct.pack(">i", 5)),
}

MATRIX = """
# row               mgmt  anon    writer  reader  fenced  unknown
exists-item         ok    noauth  ok      ok      ok      authfailed
getData-item        ok    noauth  ok      ok      ok      authfailed
getData-secret      ok    noauth  ok      ok      noauth  authfailed
getACL-item         ok    noauth  ok      ok      ok      authfailed
getChildren-app     ok    noauth  ok      ok      ok      authfailed
getChildren2-zk     ok    noauth  ok      ok      noauth  authfailed
allChildren-zk      ok    noauth  ok      ok      noauth  authfailed
create-app          ok    noauth  ok      noauth  noauth  authfailed
create-eph-app      ok    noauth  ok      noauth  noauth  authfailed
create-other        ok    noauth  noauth  noauth  noauth  authfailed
setData-item        ok    noauth  ok      noauth  noauth  authfailed
delete-item         ok    noauth  ok      noauth  noauth  authfailed
setACL-item         ok    noauth  ok      noauth  noauth  authfailed
multi-check-set     ok    noauth  ok      noauth  noauth  authfailed
check-secret-multi  ok    noauth  ok      noauth  noauth  authfailed
sync                ok    ok      ok      ok      ok      authfailed
ping                ok    ok      ok      ok      ok      authfailed
getEphemerals       ok    ok      ok      ok      ok      authfailed
whoAmI              ok    ok      ok      ok      ok      authfailed
checkWatches-item   none  none    none    none    none    authfailed
addWatch-zk         ok    ok      ok      ok      ok      authfailed
removeWatches-zk    none  none    none    none    none    authfailed
"""
CODES = {"ok": 0, "noauth": -102, "authfailed": -115, "none": -121}  # none: NOWATCHER


def parse_matrix(text):
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    columns = ["mgmt", "anon", "writer", "reader", "fenced", "unknown"]
    grid = {}
    for line in lines:
        row, *cells = line.split()
        assert row in ROWS and len(cells) == len(columns), line
        grid[row] = dict(zip(columns, cells))
    assert set(grid) == set(ROWS), set(grid) ^ set(ROWS)
    return columns, grid


class ZooKeeperAclMatrixTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.management = str(uuid.uuid4())
        cls.zk_addr = f"127.0.0.1:{free_port()}"
        cls.zk_tls_addr = f"127.0.0.1:{free_port()}"
        cls.pki_dir = tempfile.mkdtemp(prefix="tenure-zk-acl-")
        pki = Pki(cls.pki_dir)
        cls.client_tls = ssl.create_default_context(cafile=pki.ca_cert)
        cls.client_tls.load_cert_chain(pki.client_cert, pki.client_key)
        cls.over_tls = False
        cls.start_servers([
            "-acl-enabled", "-acl-default-policy", "deny",
            "-acl-initial-management", cls.management, "-tls-cert-file", pki.server_cert,
            "-tls-key-file", pki.server_key, "-tls-ca-file", pki.ca_cert,
            "-tls-verify-incoming"])
        cls.secrets = {"mgmt": cls.management, "anon": None, "unknown": str(uuid.uuid4())}
        headers = {"X-Consul-Token": cls.management}
        poll_until(lambda: cls.server.request("GET", "/v1/acl/token/self",
                                              headers=headers).status == 200,
                   timeout=15, message="the initial management token works")
        for name, rules in POLICIES.items():
            resp = cls.server.request("PUT", "/v1/acl/policy",
                                      json.dumps({"Name": name, "Rules": rules}), headers=headers)
            assert resp.status == 200, resp
            resp = cls.server.request("PUT", "/v1/acl/token",
                                      json.dumps({"Policies": [{"Name": name}]}), headers=headers)
            assert resp.status == 200, resp
            cls.secrets[name] = resp.json()["SecretID"]

    @classmethod
    def start_servers(cls, args):
        """The server the matrix is asked of: a single one here."""
        cls.servers = DevServer(extra_args=[*args, "-zk-addr", cls.zk_addr,
                                            "-zk-tls-addr", cls.zk_tls_addr])
        cls.server = cls.servers.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.servers.__exit__(None, None, None)
        shutil.rmtree(cls.pki_dir, ignore_errors=True)

    def session(self, kind):
        """A connection that presented `kind`'s token; None if auth ended it."""
        if self.over_tls:
            session = zk_wire.Session(self.zk_tls_addr, tls=self.client_tls)
        else:
            session = zk_wire.Session(self.zk_addr)
        self.addCleanup(session.close)
        secret = self.secrets[kind]
        if secret is not None:
            reply = session.call("auth", struct.pack(">i", 0) + zk_wire.ustring("digest")
                                 + zk_wire.ustring(f"tenure:{secret}"))
            if reply[2] != 0:
                self.assertTrue(session.at_eof(), "AUTHFAILED ends the connection")
                return reply[2]
        return session

    def reset_fixture(self):
        admin = self.session("mgmt")
        for path in ("/zk/app/new", "/zk/app/eph", "/zk/other"):
            admin.call("delete", zk_wire.path_version(path))
        for path, data in FIXTURE:
            err = admin.call("create", zk_wire.create_body(path, data))[2]
            if err == -110:  # exists: put its data back
                err = admin.call("setData", zk_wire.set_data_body(path, data))[2]
            self.assertEqual(err, 0, path)

    def fixture_state(self):
        admin = self.session("mgmt")
        children = admin.call("getChildren", zk_wire.path_watch("/zk/app"))[3]
        data = admin.call("getData", zk_wire.path_watch("/zk/app/item"))[3]
        value, at = zk_wire.read_ustring(data)
        stat = zk_wire.read_stat(data, at)[0] if value is not None else None
        others = admin.call("exists", zk_wire.path_watch("/zk/other"))[2]
        # The aversion too: a setACL changes nothing else.
        return children, value, stat and stat["aversion"], others

    def test_every_op_by_every_token_kind(self):
        self.check_matrix()

    def test_every_op_by_every_token_kind_over_tls(self):
        self.over_tls = True
        self.check_matrix()

    def check_matrix(self):
        columns, grid = parse_matrix(MATRIX)
        cells = matched = 0
        unauthorized = []
        mismatches = []
        for row, (op, body) in ROWS.items():
            for kind in columns:
                self.reset_fixture()
                before = self.fixture_state()
                cells += 1
                session = self.session(kind)
                if isinstance(session, int):
                    code = session
                else:
                    reply = session.call(op, body)
                    code = reply[2]
                want = CODES[grid[row][kind]]
                if code == want:
                    matched += 1
                else:
                    mismatches.append(f"{row}/{kind}: got {code}, want {want}")
                if want != 0 and code == 0:
                    unauthorized.append(f"{row}/{kind}")
                if want != 0 and op not in ("sync", "ping"):
                    after = self.fixture_state()
                    if after != before:
                        unauthorized.append(f"{row}/{kind} changed {before} to {after}")
        print(f"\nZooKeeper ACL matrix{' over TLS' if self.over_tls else ''}: {cells} cells, {matched} matched, "
              f"{len(unauthorized)} unauthorized successes")
        self.assertEqual(mismatches, [])
        self.assertEqual(unauthorized, [])
        self.assertTrue(self.server.alive(), self.server.log_tail(40))

    def test_a_persistent_watch_sees_only_what_its_token_may_read(self):
        self.reset_fixture()
        watchers = {kind: self.session(kind) for kind in ("anon", "reader", "fenced")}
        for session in watchers.values():
            # Recursive on /zk and persistent on /zk/secret (its child events).
            self.assertEqual(session.call(106, zk_wire.ustring("/zk") + struct.pack(">i", 1))[2],
                             0)
            self.assertEqual(
                session.call(106, zk_wire.ustring("/zk/secret") + struct.pack(">i", 0))[2], 0)
        admin = self.session("mgmt")
        admin.call("setData", zk_wire.set_data_body("/zk/secret/s", b"t"))
        admin.call("create", zk_wire.create_body("/zk/secret/new", b"n"))
        admin.call("setData", zk_wire.set_data_body("/zk/app/item", b"w"))
        admin.call("delete", zk_wire.path_version("/zk/secret/new"))

        def events(session):
            session.send("ping", xid=-2)  # answered after the events before it
            seen = []
            while True:
                reply = session.reply()
                if reply[0] != -1:
                    self.assertEqual(reply[0], -2)
                    return seen
                kind, _ = struct.unpack(">ii", reply[3][:8])
                seen.append((kind, zk_wire.read_ustring(reply[3], 8)[0].decode()))
        changed, created, deleted, children = 3, 1, 2, 4
        self.assertEqual(events(watchers["anon"]), [], "no read right: no event")
        self.assertEqual(events(watchers["reader"]),
                         [(changed, "/zk/secret/s"), (created, "/zk/secret/new"),
                          (children, "/zk/secret"), (changed, "/zk/app/item"),
                          (deleted, "/zk/secret/new"), (children, "/zk/secret")])
        self.assertEqual(events(watchers["fenced"]), [(changed, "/zk/app/item")],
                         "nothing from under the denied /zk/secret/")

    def test_kazoo_with_a_token_does_what_it_allows_and_nothing_else(self):
        self.reset_fixture()
        client = KazooClient(hosts=self.zk_addr, timeout=6,
                             auth_data=[("digest", f"app:{self.secrets['writer']}")])
        client.start(timeout=15)
        self.addCleanup(client.stop)
        client.create("/zk/app/kazoo", b"k", ephemeral=True)
        self.assertEqual(client.get("/zk/app/kazoo")[0], b"k")
        with self.assertRaises(NoAuthError):
            client.create("/zk/other", b"o")
        with self.assertRaises(NoAuthError):
            client.get("/outside")
        anonymous = KazooClient(hosts=self.zk_addr, timeout=6)
        anonymous.start(timeout=15)
        self.addCleanup(anonymous.stop)
        with self.assertRaises(NoAuthError):
            anonymous.get("/zk/app/kazoo")


class ZooKeeperAclMatrixThroughAFollowerTest(ZooKeeperAclMatrixTest):
    """The same grid, the same watches and kazoo through a follower of 3
    servers, clear text and TLS: a follower splices each connection to the
    leader (decision 0056, "Followers") and gains no right of its own, so
    every cell comes out as on the leader."""

    @classmethod
    def start_servers(cls, args):
        secrets_dir = tempfile.mkdtemp(prefix="tenure-zk-acl-cluster-")
        cls.secrets_dir = secrets_dir
        key_file = write_secret(secrets_dir, "raft.key", generate_cluster_key())
        # With ACLs on the operator token is a policy's, so no -operator-token-file.
        cls.servers = Cluster(3, secrets=False, extra_args=(
            "-session-ttl-multiplier", "1", "-raft-key-file", key_file, *args,
            "-zk-addr", "x", "-zk-tls-addr", "x"))
        for member in cls.servers.members:
            member.zk_addr = f"127.0.0.1:{free_port()}"
            member.zk_tls_addr = f"127.0.0.1:{free_port()}"
            at = member.extra_args.index("-zk-addr")
            member.extra_args[at + 1] = member.zk_addr
            at = member.extra_args.index("-zk-tls-addr")
            member.extra_args[at + 1] = member.zk_tls_addr
        cluster = cls.servers.__enter__()
        leader = cluster.leader()
        cls.server = next(m for m in cluster.members if m is not leader)
        cls.zk_addr = cls.server.zk_addr
        cls.zk_tls_addr = cls.server.zk_tls_addr
        # Until the follower knows the leader's port: a session through it.
        def spliced():
            session = zk_wire.Session(cls.zk_addr)
            session.close()
            return session.connect_answer is not None
        poll_until(spliced, timeout=30, message="the follower splices to the leader")

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.secrets_dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
