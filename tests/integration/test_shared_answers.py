"""Watchers of one key woken by one write share one rendered answer
(decision 0034): each must still receive exactly the bytes it would get
alone, with its own framing, and only if its token may read the key.

Run: TENURE_BIN=build/src/tenure PYTHONPATH=tests/lib /usr/bin/python3 -m unittest -v test_shared_answers
"""
import json
import unittest
import uuid

from tenure_testlib import DevServer, connect, http_request, poll_until, read_response

MANAGEMENT = str(uuid.uuid4())


def read_raw(sock, timeout=20.0):
    """One whole response as bytes (head and body, as received), and the
    head's fields lower-cased."""
    r = read_response(sock, timeout)
    return r.head + b"\r\n\r\n" + r.body, r.headers


def without_date(raw):
    return b"\r\n".join(line for line in raw.split(b"\r\n") if not line.startswith(b"Date: "))


class SharedAnswersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=[
            "-acl-enabled", "-acl-default-policy", "deny",
            "-acl-initial-management", MANAGEMENT], dev=False)
        cls.server.__enter__()
        poll_until(lambda: cls.req("GET", "/v1/acl/token/self", MANAGEMENT).status == 200,
                   timeout=15, message="the initial management token")
        policy = cls.req("PUT", "/v1/acl/policy", MANAGEMENT, {
            "Name": "shared-read", "Rules": 'key_prefix "shared/" { policy = "read" }'}).json()
        cls.reader = cls.req("PUT", "/v1/acl/token", MANAGEMENT,
                             {"Policies": [{"ID": policy["ID"]}]}).json()["SecretID"]
        other = cls.req("PUT", "/v1/acl/policy", MANAGEMENT, {
            "Name": "other-read", "Rules": 'key_prefix "other/" { policy = "read" }'}).json()
        cls.stranger = cls.req("PUT", "/v1/acl/token", MANAGEMENT,
                               {"Policies": [{"ID": other["ID"]}]}).json()["SecretID"]

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    @classmethod
    def req(cls, method, path, token=None, body=None):
        headers = {"X-Consul-Token": token} if token else {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        return http_request(cls.server.http_addr, method, path, body, headers)

    def parked(self):
        self_info = self.req("GET", "/v1/agent/self", MANAGEMENT).json()
        return int(self_info["Stats"]["tenure"]["blocking_queries"])

    def test_woken_watchers_get_their_own_framing_and_only_what_they_may_read(self):
        key = "shared/k"
        r = self.req("PUT", "/v1/kv/" + key, MANAGEMENT, "v1")
        self.assertEqual(r.status, 200, r.text)
        index = int(self.req("GET", "/v1/kv/" + key, MANAGEMENT).header("X-Consul-Index"))
        base = self.parked()
        target = f"/v1/kv/{key}?index={index}&wait=30s"
        framings = {
            "keepalive-1": f"GET {target} HTTP/1.1\r\nHost: t\r\nX-Consul-Token: {self.reader}\r\n\r\n",
            "keepalive-2": f"GET {target} HTTP/1.1\r\nHost: t\r\nX-Consul-Token: {self.reader}\r\n\r\n",
            "token-query": f"GET {target}&token={self.reader} HTTP/1.1\r\nHost: t\r\n\r\n",
            "close": (f"GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                      f"X-Consul-Token: {self.reader}\r\n\r\n"),
            "http10": (f"GET {target} HTTP/1.0\r\nConnection: keep-alive\r\n"
                       f"X-Consul-Token: {self.reader}\r\n\r\n"),
            "pretty": f"GET {target}&pretty HTTP/1.1\r\nHost: t\r\nX-Consul-Token: {self.reader}\r\n\r\n",
            "stranger": f"GET {target} HTTP/1.1\r\nHost: t\r\nX-Consul-Token: {self.stranger}\r\n\r\n",
        }
        socks = {}
        try:
            for name, text in framings.items():
                socks[name] = connect(self.server.http_addr)
                socks[name].sendall(text.encode())
            poll_until(lambda: self.parked() >= base + len(framings), timeout=10,
                       message="every watcher parked")
            r = self.req("PUT", "/v1/kv/" + key, MANAGEMENT, "v2")
            self.assertEqual(r.status, 200, r.text)
            answers = {name: read_raw(sock) for name, sock in socks.items()}
        finally:
            for sock in socks.values():
                sock.close()

        # What the same reader gets from a GET that does not wait.
        with connect(self.server.http_addr) as sock:
            sock.sendall(f"GET /v1/kv/{key} HTTP/1.1\r\nHost: t\r\n"
                         f"X-Consul-Token: {self.reader}\r\n\r\n".encode())
            alone, alone_fields = read_raw(sock)
        self.assertTrue(alone.startswith(b"HTTP/1.1 200 OK\r\n"), alone)
        entry = json.loads(alone.split(b"\r\n\r\n", 1)[1])
        self.assertEqual(entry[0]["Key"], key)
        self.assertGreater(int(alone_fields["x-consul-index"]), index)

        for name in ("keepalive-1", "keepalive-2", "token-query"):
            raw, _ = answers[name]
            self.assertEqual(without_date(raw), without_date(alone), name)
        raw, fields = answers["close"]
        self.assertEqual(fields.get("connection"), "close")
        self.assertEqual(raw.split(b"\r\n\r\n", 1)[1], alone.split(b"\r\n\r\n", 1)[1])
        raw, fields = answers["http10"]
        self.assertEqual(fields.get("connection"), "keep-alive")
        self.assertEqual(raw.split(b"\r\n\r\n", 1)[1], alone.split(b"\r\n\r\n", 1)[1])
        raw, fields = answers["pretty"]
        body = raw.split(b"\r\n\r\n", 1)[1]
        self.assertIn(b"\n", body)
        self.assertEqual(json.loads(body), entry)
        self.assertEqual(fields["x-consul-index"], alone_fields["x-consul-index"])
        raw, _ = answers["stranger"]
        self.assertTrue(raw.startswith(b"HTTP/1.1 403 "), raw)
        self.assertNotIn(b"v2", raw)
        self.assertNotIn(b"djI=", raw)  # base64 of "v2"


if __name__ == "__main__":
    unittest.main()
