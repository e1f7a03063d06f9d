"""Real-client compatibility: etcd3gw (Debian's python3-etcd3gw, the client of
etcd's JSON gateway that OpenStack's tooz uses), unmodified, against
`tenure server -dev -grpc-addr` (decision 0048 section 7).

Its KV calls on its default path (/v3alpha/, gone from etcd 3.4 but served
by tenure as etcd 3.3 did) and /v3/: put, get with metadata and sorting,
prefixes, get_all, create (a txn on CREATE == 0), replace (a txn on VALUE),
delete, delete_prefix, status and members; leases (grant, keys, refresh,
ttl, revoke, expiry) and its Lock (a txn on CREATE == 0 with a lease); and
what a Consul client sees of the same keys. Watches come with the watch hub
(docs/etcd-compat.md).
"""

import unittest

from etcd3gw.client import Etcd3Client

from tenure_testlib import DevServer, free_port, poll_until


class Etcd3gwTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.server = DevServer(extra_args=["-grpc-addr", f"127.0.0.1:{cls.port}"]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def clients(self):
        return [Etcd3Client(host="127.0.0.1", port=self.port),
                Etcd3Client(host="127.0.0.1", port=self.port, api_path="/v3/")]

    def test_status_and_members(self):
        for client in self.clients():
            status = client.status()
            self.assertEqual(status["version"], "3.4.23")
            self.assertEqual(status["leader"], status["header"]["member_id"])
            members = client.members()
            self.assertEqual([m["clientURLs"] for m in members],
                             [[f"http://127.0.0.1:{self.port}"]])

    def test_put_get_and_prefixes(self):
        for n, client in enumerate(self.clients()):
            prefix = f"/etcd3gw/{n}/"
            self.assertTrue(client.put(prefix + "b", "two"))
            self.assertTrue(client.put(prefix + "a", "one"))
            self.assertEqual(client.get(prefix + "a"), [b"one"])
            self.assertEqual(client.get(prefix + "missing"), [])
            values = [(value, meta["key"]) for value, meta in client.get_prefix(prefix)]
            self.assertEqual(values, [(b"one", (prefix + "a").encode()),
                                      (b"two", (prefix + "b").encode())])
            newest_first = client.get_prefix(prefix, sort_order="descend", sort_target="create")
            self.assertEqual([meta["key"] for _, meta in newest_first],
                             [(prefix + "a").encode(), (prefix + "b").encode()])
            value, meta = client.get(prefix + "a", metadata=True)[0]
            self.assertEqual(meta["version"], "1")
            self.assertEqual(int(meta["mod_revision"]), int(meta["create_revision"]))
            # get_all encodes its b"\0" twice, so against etcd too it reads
            # every key from b"AA==" on (range_end "\0"): keys starting with
            # "/" sort before it, those with "z" after.
            client.put(f"zz-etcd3gw/{n}", "last")
            everything = [meta["key"] for _, meta in client.get_all()]
            self.assertIn(f"zz-etcd3gw/{n}".encode(), everything)
            self.assertNotIn((prefix + "a").encode(), everything)
            self.assertEqual(everything, sorted(everything))
            self.assertTrue(all(key >= b"AA==" for key in everything))

    def test_create_replace_and_delete(self):
        for n, client in enumerate(self.clients()):
            key = f"/etcd3gw-txn/{n}"
            self.assertTrue(client.create(key, "first"))
            self.assertFalse(client.create(key, "second"))
            self.assertEqual(client.get(key), [b"first"])
            self.assertFalse(client.replace(key, "wrong", "third"))
            self.assertTrue(client.replace(key, "first", "third"))
            self.assertEqual(client.get(key), [b"third"])
            self.assertTrue(client.delete(key))
            self.assertEqual(client.get(key), [])
            client.put(key + "/x", "1")
            client.put(key + "/y", "2")
            self.assertTrue(client.delete_prefix(key + "/"))
            self.assertEqual(client.get_prefix(key + "/"), [])

    def test_leases_hold_keys_until_revoked(self):
        client = self.clients()[0]
        lease = client.lease(ttl=30)
        self.assertGreater(lease.id, 0)
        self.assertTrue(0 < lease.ttl() <= 30)
        client.put("/etcd3gw-lease/a", "held", lease=lease)
        self.assertEqual(lease.keys(), [b"/etcd3gw-lease/a"])
        self.assertEqual(lease.refresh(), 30)
        # Consul sees the key held by the lease's session, a numbered one.
        entry = self.server.request("GET", "/v1/kv//etcd3gw-lease/a").json()[0]
        digits = f"{lease.id:016x}"
        self.assertEqual(entry["Session"], f"00000000-0000-0000-{digits[:4]}-{digits[4:]}")
        self.assertTrue(lease.revoke())
        self.assertEqual(client.get("/etcd3gw-lease/a"), [])
        self.assertEqual(lease.ttl(), -1)
        self.assertEqual(lease.refresh(), -1)  # no TTL in the answer: the lease is gone

    def test_a_lease_left_alone_expires_with_its_keys(self):
        client = self.clients()[0]
        lease = client.lease(ttl=2)
        client.put("/etcd3gw-expiry/k", "v", lease=lease)
        poll_until(lambda: client.get("/etcd3gw-expiry/k") == [], timeout=15,
                   message="the key of an expired lease is still there")
        self.assertEqual(lease.ttl(), -1)

    def test_lock_excludes_a_second_holder(self):
        client = self.clients()[0]
        first = client.lock("etcd3gw-lock", ttl=30)
        second = client.lock("etcd3gw-lock", ttl=30)
        self.assertTrue(first.acquire())
        self.assertFalse(second.acquire())
        self.assertTrue(first.is_acquired())
        self.assertFalse(second.is_acquired())
        self.assertEqual(first.refresh(), 30)
        self.assertTrue(first.release())
        self.assertFalse(first.release())
        self.assertTrue(second.acquire())
        self.assertTrue(second.is_acquired())
        self.assertTrue(second.release())
        for lock in (first, second):
            lock.lease.revoke()

    def test_consul_sees_what_etcd3gw_wrote(self):
        client = self.clients()[0]
        client.put("shared/from-etcd", "hello")
        resp = self.server.request("GET", "/v1/kv/shared/from-etcd?raw")
        self.assertEqual((resp.status, resp.body), (200, b"hello"))


if __name__ == "__main__":
    unittest.main()
