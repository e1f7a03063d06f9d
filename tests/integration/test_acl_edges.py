"""ACL bad input and edges against a real server (docs/acl.md, docs/limits.md):
a token that expires, or is deleted, while a blocking query it opened is
parked; tokens in malformed headers; absurdly long tokens and rules; the
limits on policies per token; a second bootstrap and the reset file. Each
gets Consul's status and text (or a clear one), changes nothing, and the
server keeps serving.

Run: TENURE_BIN=build/src/tenure PYTHONPATH=tests/lib /usr/bin/python3 -m unittest -v test_acl_edges
"""
import json
import os
import threading
import unittest
import uuid

from tenure_testlib import DevServer, http_request, poll_until

MANAGEMENT = str(uuid.uuid4())
ANONYMOUS_KEY_READ = ('Permission denied: anonymous token lacks permission \'key:read\' on "{}". '
                      'The anonymous token is used implicitly when a request does not specify '
                      'a token.')


class AclEdgesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=[
            "-acl-enabled", "-acl-default-policy", "deny",
            "-acl-initial-management", MANAGEMENT,
            "-acl-token-min-expiration-ttl", "1s"], dev=False)
        cls.server.__enter__()
        poll_until(lambda: cls.req("GET", "/v1/acl/token/self", MANAGEMENT).status == 200,
                   timeout=15, message="the initial management token")
        cls.policy = cls.req("PUT", "/v1/acl/policy", MANAGEMENT, {
            "Name": "edges", "Rules": 'key_prefix "edge/" { policy = "write" }'}).json()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    @classmethod
    def req(cls, method, path, token=None, body=None, headers=None, timeout=10.0):
        headers = dict(headers or {})
        if token is not None:
            headers["X-Consul-Token"] = token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        return http_request(cls.server.http_addr, method, path, body, headers, timeout=timeout)

    def token(self, **extra):
        body = {"Policies": [{"ID": self.policy["ID"]}], **extra}
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT, body)
        self.assertEqual(r.status, 200, r.text)
        return r.json()

    def parked_get(self, key, index, token):
        """Opens GET /v1/kv/<key>?index=N&wait=30s in a thread; returns a
        function that waits for its answer."""
        answer = {}

        def run():
            answer["r"] = self.req("GET", f"/v1/kv/{key}?index={index}&wait=30s", token,
                                   timeout=40)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()

        def wait():
            thread.join(40)
            self.assertFalse(thread.is_alive(), "the parked query never answered")
            return answer["r"]
        return wait

    def parked_count(self):
        self_info = self.req("GET", "/v1/agent/self", MANAGEMENT).json()
        return int(self_info["Stats"]["tenure"]["blocking_queries"])

    def test_a_token_that_expires_while_its_query_is_parked_gets_acl_not_found(self):
        holder = self.token(ExpirationTTL="2s")
        r = self.req("PUT", "/v1/kv/edge/expiring", holder["SecretID"], "v1")
        self.assertEqual(r.text, "true")
        index = int(self.req("GET", "/v1/kv/edge/expiring", holder["SecretID"])
                    .header("X-Consul-Index"))
        before = self.parked_count()
        wait = self.parked_get("edge/expiring", index, holder["SecretID"])
        poll_until(lambda: self.parked_count() > before, timeout=10, message="the query parked")
        # Past its expiry, the key changes: the query wakes and answers for a
        # token that no longer exists.
        poll_until(lambda: self.req("GET", "/v1/acl/token/self", holder["SecretID"]).status == 403,
                   timeout=10, message="the token expired")
        self.assertEqual(self.req("PUT", "/v1/kv/edge/expiring", MANAGEMENT, "v2").text, "true")
        answer = wait()
        self.assertEqual((answer.status, answer.text), (403, "ACL not found"))
        # The leader deletes it, too.
        poll_until(lambda: self.req("GET", f"/v1/acl/token/{holder['AccessorID']}",
                                    MANAGEMENT).status == 403,
                   timeout=70, message="the leader deleted the expired token")

    def test_a_token_deleted_while_its_query_is_parked_gets_acl_not_found(self):
        holder = self.token()
        self.assertEqual(self.req("PUT", "/v1/kv/edge/deleted", holder["SecretID"], "v1").text,
                         "true")
        index = int(self.req("GET", "/v1/kv/edge/deleted", holder["SecretID"])
                    .header("X-Consul-Index"))
        before = self.parked_count()
        wait = self.parked_get("edge/deleted", index, holder["SecretID"])
        poll_until(lambda: self.parked_count() > before, timeout=10, message="the query parked")
        r = self.req("DELETE", f"/v1/acl/token/{holder['AccessorID']}", MANAGEMENT)
        self.assertEqual(r.text, "true")
        self.assertEqual(self.req("PUT", "/v1/kv/edge/deleted", MANAGEMENT, "v2").text, "true")
        answer = wait()
        self.assertEqual((answer.status, answer.text), (403, "ACL not found"))

    def test_malformed_token_headers_are_no_token_or_an_unknown_one(self):
        self.req("PUT", "/v1/kv/edge/h", MANAGEMENT, "v")
        no_token = ANONYMOUS_KEY_READ.format("edge/h")
        cases = [
            ({"Authorization": "Basic " + MANAGEMENT}, 403, no_token),  # not Bearer: ignored
            ({"Authorization": "Bearer"}, 403, no_token),               # no token after it
            ({"Authorization": "bearer " + MANAGEMENT}, 200, None),     # the scheme in any case
            ({"X-Consul-Token": ""}, 403, no_token),                    # empty: skipped
            ({"X-Consul-Token": MANAGEMENT + " "}, 200, None),  # HTTP drops surrounding blanks
            ({"X-Consul-Token": MANAGEMENT[:-1]}, 403, "ACL not found"),
            ({"X-Consul-Token": MANAGEMENT.upper()}, 403, "ACL not found"),  # secrets are exact
            ({"X-Consul-Token": "\u00e9".encode().decode("latin-1")}, 403, "ACL not found"),
        ]
        for headers, status, text in cases:
            with self.subTest(headers=headers):
                r = self.req("GET", "/v1/kv/edge/h", headers=headers)
                self.assertEqual(r.status, status, r.text)
                if text is not None:
                    self.assertEqual(r.text, text)
        # ?token= wins over the header, as in Consul: an unknown query token
        # is refused even with a good header.
        r = self.req("GET", "/v1/kv/edge/h?token=nope", MANAGEMENT)
        self.assertEqual((r.status, r.text), (403, "ACL not found"))

    def test_large_listings_copied_in_slices_leave_out_what_the_token_cannot_read(self):
        # Answers past 256 KiB are copied a slice per loop turn (decision
        # 0051); the ACL filter applies to each entry as it is copied.
        policy = self.req("PUT", "/v1/acl/policy", MANAGEMENT, {
            "Name": "sliced", "Rules": 'key_prefix "sliced/ok" { policy = "read" }\n'
                                      'key_prefix "slicedkeys/ok" { policy = "read" }'}).json()
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT, {"Policies": [{"ID": policy["ID"]}]})
        self.assertEqual(r.status, 200, r.text)
        reader = r.json()["SecretID"]
        for name in ("no0", "ok0", "no1", "ok1", "ok2", "no2"):
            r = self.req("PUT", f"/v1/kv/sliced/{name}", MANAGEMENT, name[:2] * 150_000)
            self.assertEqual(r.status, 200, r.text)
        ops = []
        for i in range(3000):
            kind = "ok" if i % 3 == 0 else "no"
            ops.append({"KV": {"Verb": "set", "Key": f"slicedkeys/{kind}{i:05d}-" + "k" * 90,
                               "Value": "dg=="}})
            if len(ops) == 64 or i == 2999:
                r = self.req("PUT", "/v1/txn", MANAGEMENT, ops)
                self.assertEqual(r.status, 200, r.text)
                ops = []

        r = self.req("GET", "/v1/kv/sliced/?recurse", reader, timeout=60)
        self.assertEqual(r.status, 200, r.text[:200])
        self.assertEqual([e["Key"] for e in r.json()], ["sliced/ok0", "sliced/ok1", "sliced/ok2"])
        self.assertEqual(r.header("X-Consul-Results-Filtered-By-ACLs"), "true")
        everything = self.req("GET", "/v1/kv/sliced/?recurse", MANAGEMENT, timeout=60)
        self.assertEqual(len(everything.json()), 6)
        self.assertIsNone(everything.header("X-Consul-Results-Filtered-By-ACLs"))

        r = self.req("GET", "/v1/kv/slicedkeys/?keys", reader, timeout=60)
        self.assertEqual(r.status, 200, r.text[:200])
        keys = r.json()
        self.assertEqual(len(keys), 1000)
        self.assertTrue(all(k.startswith("slicedkeys/ok") for k in keys))
        self.assertEqual(r.header("X-Consul-Results-Filtered-By-ACLs"), "true")
        # Nothing readable: 404, as the one-turn path answers.
        r = self.req("GET", "/v1/kv/slicedkeys/?keys", self.token()["SecretID"], timeout=60)
        self.assertEqual(r.status, 404, r.text[:200])
        self.assertEqual(r.header("X-Consul-Results-Filtered-By-ACLs"), "true")

    def test_absurd_sizes_are_refused_and_nothing_changes(self):
        tokens_before = self.req("GET", "/v1/acl/tokens", MANAGEMENT).json()
        policies_before = self.req("GET", "/v1/acl/policies", MANAGEMENT).json()
        # A 60 KiB secret: looked up, not found.
        r = self.req("GET", "/v1/kv/edge/x", "t" * 60_000)
        self.assertEqual((r.status, r.text), (403, "ACL not found"))
        # Rules past 64 KiB.
        r = self.req("PUT", "/v1/acl/policy", MANAGEMENT,
                     {"Name": "huge", "Rules": "# " + "x" * 70_000})
        self.assertEqual(r.status, 413, r.text)
        # More than 64 policies on one token.
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT,
                     {"Policies": [{"ID": self.policy["ID"]}] * 65})
        self.assertEqual(r.status, 400, r.text)
        self.assertIn("more than 64 policies", r.text)
        # A description past 4 KiB.
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT, {"Description": "d" * 5000})
        self.assertEqual(r.status, 400, r.text)
        # A token linking a missing policy; a duplicate policy name.
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT, {"Policies": [{"ID": str(uuid.uuid4())}]})
        self.assertEqual(r.status, 400, r.text)
        self.assertIn("No such ACL policy with ID", r.text)
        r = self.req("PUT", "/v1/acl/policy", MANAGEMENT, {"Name": "edges"})
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.text, 'Invalid Policy: A Policy with Name "edges" already exists')
        # Not JSON at all.
        r = self.req("PUT", "/v1/acl/token", MANAGEMENT, "{not json")
        self.assertEqual((r.status, r.text), (400, "Token decoding failed: invalid JSON"))
        self.assertEqual(self.req("GET", "/v1/acl/tokens", MANAGEMENT).json(), tokens_before)
        self.assertEqual(self.req("GET", "/v1/acl/policies", MANAGEMENT).json(), policies_before)
        self.assertEqual(self.req("GET", "/v1/status/leader").status, 200)

    def test_the_builtins_cannot_be_deleted_and_bootstrap_stays_closed(self):
        r = self.req("DELETE", "/v1/acl/token/00000000-0000-0000-0000-000000000002", MANAGEMENT)
        self.assertEqual((r.status, r.text),
                         (400, "Delete operation not permitted on the anonymous token"))
        r = self.req("DELETE", "/v1/acl/policy/00000000-0000-0000-0000-000000000001", MANAGEMENT)
        self.assertEqual(
            (r.status, r.text),
            (400, "Delete operation not permitted on the builtin global-management policy"))
        r = self.req("PUT", "/v1/acl/policy/00000000-0000-0000-0000-000000000001", MANAGEMENT,
                     {"Name": "global-management", "Rules": 'acl = "read"'})
        self.assertEqual(r.status, 400, r.text)
        # -acl-initial-management counted as the bootstrap.
        r = self.req("PUT", "/v1/acl/bootstrap")
        self.assertEqual(r.status, 403, r.text)
        self.assertRegex(r.text, r"^Permission denied: ACL bootstrap no longer allowed "
                                 r"\(reset index: \d+\)$")


class AclResetTest(unittest.TestCase):
    """Lost the management token: the reset file reopens the bootstrap once
    (docs/acl.md), and is removed after use."""

    def test_the_reset_index_allows_one_more_bootstrap(self):
        with DevServer(extra_args=["-acl-enabled", "-acl-default-policy", "deny"],
                       dev=False) as server:
            poll_until(lambda: http_request(server.http_addr, "GET", "/v1/status/leader")
                       .text not in ('""', ""), timeout=15, message="a leader")
            first = poll_until(
                lambda: (lambda r: r if r.status == 200 else None)(
                    http_request(server.http_addr, "PUT", "/v1/acl/bootstrap")),
                timeout=15, message="the first bootstrap")
            again = http_request(server.http_addr, "PUT", "/v1/acl/bootstrap")
            self.assertEqual(again.status, 403)
            reset = int(again.text.rsplit("reset index: ", 1)[1].rstrip(")"))
            reset_file = os.path.join(server.data_dir, "acl-bootstrap-reset")
            with open(reset_file, "w") as f:
                f.write(f"{reset + 1}\n")  # a wrong index changes nothing
            self.assertEqual(http_request(server.http_addr, "PUT", "/v1/acl/bootstrap").status, 403)
            with open(reset_file, "w") as f:
                f.write(f"{reset}\n")
            second = http_request(server.http_addr, "PUT", "/v1/acl/bootstrap")
            self.assertEqual(second.status, 200, second.text)
            self.assertNotEqual(second.json()["SecretID"], first.json()["SecretID"])
            self.assertFalse(os.path.exists(reset_file), "the reset file is removed after use")
            # Both management tokens work; the bootstrap is closed again.
            for secret in (first.json()["SecretID"], second.json()["SecretID"]):
                r = http_request(server.http_addr, "GET", "/v1/acl/token/self",
                                 headers={"X-Consul-Token": secret})
                self.assertEqual(r.status, 200)
            self.assertEqual(http_request(server.http_addr, "PUT", "/v1/acl/bootstrap").status, 403)


if __name__ == "__main__":
    unittest.main()
