"""The dashboard at /ui/ (docs/dashboard.md): its files over HTTP (types,
headers, unknown paths, hostile paths and query strings, methods), and the
page itself in headless Chromium against a real server: the holder shown
changes when its candidate is killed, the invalidate button destroys a
session, and with ACLs a read-only token's invalidate shows the server's
refusal and changes nothing.

Screenshots go to $TENURE_DASHBOARD_SCREENSHOTS when set (scripts/screenshots
does not exist: run this test with it set to docs/images to refresh the
README's pictures); otherwise to a temp dir that is deleted.

Timelines: the server answers GET /v1/tenure/history/<key> (docs/history.md),
and the browser test asserts each election's timeline on screen from it; a
server without the endpoint fails the test. (The page itself still shows a
note instead of timelines when a server lacks it.)

Run: TENURE_BIN=build/src/tenure PYTHONPATH=tests/lib /usr/bin/python3 -m unittest -v test_dashboard
"""

import base64
import json
import os
import re
import shutil
import signal
import tempfile
import unittest

from tenure_testlib import (Cluster, DevServer, SharedServerTestCase, poll_until, quote_key, raw_request,
                            read_response, connect)
from headless_browser import Browser, chromium_binary

MANAGEMENT = "5ad1e5c0-0000-4000-8000-00000000da5b"
CSP_NEEDS = ["default-src 'none'", "script-src 'self'", "connect-src 'self'",
             "style-src 'self'", "frame-ancestors 'none'"]
ASSETS = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css"}


def screenshot_dir():
    return os.environ.get("TENURE_DASHBOARD_SCREENSHOTS")


class DashboardHttpTest(SharedServerTestCase):
    def assert_hardened(self, r):
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff")
        csp = r.header("Content-Security-Policy") or ""
        for need in CSP_NEEDS:
            self.assertIn(need, csp)
        self.assertNotIn("unsafe-inline", csp)
        self.assertNotIn("unsafe-eval", csp)

    def kv_index(self):
        return self.server.request("GET", "/v1/kv/?recurse").header("X-Consul-Index")

    def test_files_types_and_headers(self):
        for name, kind in ASSETS.items():
            r = self.server.request("GET", "/ui/" + name)
            self.assertEqual(r.status, 200, name)
            self.assertTrue(r.header("Content-Type").startswith(kind), r.header("Content-Type"))
            self.assertEqual(r.header("Cache-Control"), "no-cache")
            self.assert_hardened(r)
            self.assertGreater(len(r.body), 100)
            etag = r.header("ETag")
            self.assertRegex(etag, r'^"[0-9a-f]{16}"$')
            again = self.server.request("GET", "/ui/" + name, headers={"If-None-Match": etag})
            self.assertEqual(again.status, 304)
            self.assertEqual(again.body, b"")
        index = self.server.request("GET", "/ui/")
        self.assertEqual(index.body, self.server.request("GET", "/ui/index.html").body)
        self.assertIn(b'<script src="app.js"', index.body)

    def test_no_external_resources_and_no_inline_script(self):
        for name in ASSETS:
            # SVG's namespace name is an identifier, never fetched.
            text = self.server.request("GET", "/ui/" + name).text.replace(
                "'http://www.w3.org/2000/svg'", "")
            for pattern in (r"(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", r"(?i)@import|url\(",
                            r"(?i)innerHTML|outerHTML|insertAdjacentHTML|eval\(|new Function"):
                found = re.search(pattern, text)
                self.assertIsNone(found, f"{name}: {found and found.group(0)}")
        html = self.server.request("GET", "/ui/").text
        # Every <script> has a src (no inline script) and no on* handler attributes.
        self.assertEqual(len(re.findall(r"<script\b", html)), len(re.findall(r"<script src=", html)))
        self.assertNotRegex(html, r"(?i)\son[a-z]+=")

    def test_head_and_options(self):
        get = self.server.request("GET", "/ui/app.js")
        head = self.server.request("HEAD", "/ui/app.js")
        self.assertEqual(head.status, 200)
        self.assertEqual(head.body, b"")
        self.assertEqual(head.header("Content-Length"), str(len(get.body)))
        options = self.server.request("OPTIONS", "/ui/")
        self.assertEqual(options.status, 200)
        self.assertEqual(options.header("Allow"), "OPTIONS,GET,HEAD")

    def test_redirects(self):
        for path in ("/", "/ui"):
            r = self.server.request("GET", path)
            self.assertEqual(r.status, 301, path)
            self.assertEqual(r.header("Location"), "/ui/")

    def test_other_methods_405_and_nothing_changed(self):
        before = self.kv_index()
        for method in ("PUT", "POST", "DELETE", "PATCH"):
            r = self.server.request(method, "/ui/index.html", body="x")
            self.assertEqual(r.status, 405, method)
            self.assertEqual(r.text, f"method {method} not allowed")
            self.assertEqual(r.header("Allow"), "OPTIONS,GET,HEAD")
            self.assert_hardened(r)
        self.assertEqual(self.kv_index(), before)
        self.server.check_healthy("after 405s")

    def test_unknown_and_hostile_paths_404(self):
        before = self.kv_index()
        # Sent raw: clients would clean the dots away before sending.
        for target in ("/ui/nope.js", "/ui/../../etc/passwd", "/ui/%2e%2e/%2e%2e/etc/passwd",
                       "/ui/..%2f..%2fetc%2fpasswd", "/ui/%00", "/ui/app.js%00",
                       "/ui/index.html/", "/ui//app.js", "/ui/APP.JS", "/ui/app.js/..",
                       "/ui/" + "a" * 4000):
            sock = connect(self.server.http_addr)
            try:
                sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                r = read_response(sock)
            finally:
                sock.close()
            self.assertEqual(r.status, 404, target)
            self.assertEqual(r.text, "Invalid URL path: not a file of the dashboard "
                                     "(the dashboard is at /ui/)")
            self.assertNotIn("root:", r.text)
            self.assert_hardened(r)
        self.assertEqual(self.kv_index(), before)
        self.server.check_healthy("after hostile paths")

    def test_very_long_path_refused_by_transport_limits(self):
        r = raw_request(self.server.http_addr,
                        ("GET /ui/" + "a" * 200_000 + " HTTP/1.1\r\nHost: x\r\n\r\n").encode())
        self.assertGreaterEqual(r.status, 400)
        self.assertLess(r.status, 500)
        self.server.check_healthy("after a very long path")

    def test_hostile_query_strings(self):
        before = self.kv_index()
        body = self.server.request("GET", "/ui/app.js").body
        for query in ("index=-1&wait=abc", "token=%00%ff", "recurse&keys&separator=%2F",
                      "a=" + "x" * 4000, "%3Cscript%3E=1", "=&&=&", "dc=elsewhere"):
            r = self.server.request("GET", "/ui/app.js?" + query)
            self.assertEqual(r.status, 200, query)
            self.assertEqual(r.body, body, query)
        bad = self.server.request("GET", "/ui/app.js?x=%zz")
        self.assertEqual(bad.status, 400)
        self.assertIn('invalid URL escape "%zz"', bad.text)
        self.assertEqual(self.kv_index(), before)
        self.server.check_healthy("after hostile queries")


# Injected before the page's scripts: records CSP violations, script errors
# and unhandled promise rejections, which the tests require to stay empty.
PAGE_PROBLEMS = """(() => {
  window.pageProblems = [];
  document.addEventListener('securitypolicyviolation',
      (e) => window.pageProblems.push('CSP ' + e.violatedDirective + ' ' + e.blockedURI));
  window.addEventListener('error', (e) => window.pageProblems.push('error ' + e.message));
  window.addEventListener('unhandledrejection',
      (e) => window.pageProblems.push('rejection ' + String(e.reason)));
})();"""


def read_pid(path):
    with open(path) as fh:
        return int(fh.read())


@unittest.skipIf(chromium_binary() is None, "chromium is not installed (scripts/setup)")
class DashboardBrowserTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-dashboard-")
        self.shots = screenshot_dir() or self.dir
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        shutil.rmtree(self.dir, ignore_errors=True)

    def candidate(self, server, name, election="web", token=None):
        """`tenure run ELECTION -candidate NAME -- sleep`: returns its Popen."""
        env = server.cli_env({"TENURE_HTTP_TOKEN": token} if token else None)
        p = server.popen_cli("run", election, "-candidate", name, "-ttl", "10s",
                             "-lock-delay", "0s", "--", "sleep", "300", env=env)
        self.procs.append(p)
        return p

    def holder(self, server, election="web", headers=None):
        r = server.request("GET", f"/v1/kv/service/{election}/leader", headers=headers)
        if r.status != 200 or not r.json()[0].get("Session"):
            return None
        entry = r.json()[0]
        value = json.loads(base64.b64decode(entry["Value"]))
        return entry["Session"], value["Candidate"], entry["Fence"]

    def history_exists(self, server, key):
        r = server.request("GET", "/v1/tenure/history/" + quote_key(key))
        self.assertEqual(r.status, 200, "this server keeps no lock history: " + r.text)
        return True

    def row_text(self, browser, key, cell):
        return browser.text(f'tr.election[data-key="{key}"] td.{cell}')

    def wait_row_text(self, browser, key, cell, want):
        """Waits until the cell shows `want` (the KV and session answers
        arrive in either order); fails with what it showed instead."""
        shown = []

        def showing():
            shown[:] = [self.row_text(browser, key, cell)]
            return shown[0] == want

        try:
            poll_until(showing, timeout=30)
        except AssertionError:
            self.fail(f"{key} {cell}: shows {shown[0]!r}, not {want!r}")

    def test_holder_changes_on_screen_and_invalidate(self):
        with DevServer(extra_args=["-session-ttl-multiplier", "1"]) as server, \
                Browser(width=1100) as browser:
            key = "service/web/leader"
            alice = self.candidate(server, "alice")
            poll_until(lambda: self.holder(server), timeout=30, message="alice never elected")
            bob = self.candidate(server, "bob")
            session, name, fence = self.holder(server)
            self.assertEqual(name, "alice")
            browser.before_every_page(PAGE_PROBLEMS)
            browser.navigate(f"http://{server.http_addr}/ui/")
            browser.wait_for(f"document.querySelector('tr.election[data-key=\"{key}\"]')")
            node = server.get_json(f"/v1/session/info/{session}")[0]["Node"]
            self.wait_row_text(browser, key, "holder", f"alice @ {node}")
            self.assertEqual(self.row_text(browser, key, "fence"), str(fence))
            # TTL left: the leader's TTLRemaining counting down (TTL 10s x
            # multiplier 1), read again when it runs out (alice renews).
            def ttl_left():
                text = self.row_text(browser, key, "ttl")
                self.assertRegex(text, r"^\d+s$")
                return int(text[:-1])
            first = ttl_left()
            self.assertLessEqual(first, 10)
            seen = [first]
            poll_until(lambda: seen.append(ttl_left()) or seen[-1] < first, timeout=5,
                       message=f"the TTL cell does not count down: {seen}")
            poll_until(lambda: seen.append(ttl_left()) or seen[-1] > min(seen), timeout=20,
                       message=f"the TTL cell was not read again after running out: {seen}")
            browser.wait_for(f"""document.querySelector(
                'tr.election[data-key="{key}"] td.waiting').textContent === 'bob'""",
                             message="bob not shown waiting")
            self.assertFalse(browser.evaluate(
                "!!document.querySelector('tr.election[data-key*=\"/candidates/\"]')"),
                "a candidate's registration shown as an election")
            held = browser.wait_for(f"""(() => {{ const t = document.querySelector(
                'tr.election[data-key="{key}"] td.held').textContent;
                return /\\d+s$/.test(t) && t; }})()""")
            self.assertRegex(held, r"^(≥ )?\d+s$")
            self.assertIn(session, browser.evaluate(
                "[...document.querySelectorAll('tr.session')].map(r => r.dataset.id).join(' ')"))
            self.assertEqual(browser.text(f'tr.session[data-id="{session}"] td.locks'),
                             f"service/web/candidates/alice, {key}")
            browser.wait_for("/^\\d+$/.test(document.getElementById('cluster-commit').textContent)",
                             message="no commit index shown")
            self.assertEqual(browser.text("#cluster-leader"), server.request(
                "GET", "/v1/status/leader").json())
            self.assertRegex(browser.text("#cluster-commit"), r"^\d+$")
            self.assertRegex(browser.text("#cluster-term"), r"^\d+$")
            self.assertEqual(browser.evaluate("document.querySelectorAll('tr.member').length"), 1)
            self.assertEqual(browser.text("#status"), "live")
            # The page waits in blocking queries (KV and sessions at least),
            # it does not poll: the server counts them parked.
            poll_until(lambda: int(server.get_json("/v1/agent/self")["Stats"]["tenure"]
                                   ["blocking_queries"]) >= 2, timeout=10,
                       message="the page holds no blocking query")
            history = self.history_exists(server, key)
            if history:
                # The record's SessionName is the session's ("tenure run web").
                browser.wait_for(f"document.querySelector('.timeline[data-key=\"{key}\"] li')")
                self.assertRegex(browser.text(f'.timeline[data-key="{key}"] li'),
                                 rf"^fence {fence} · tenure run web @ .+ → now \(held\)$")
                # Held for: from the open record's GrantedAt, exact (no "≥").
                browser.wait_for(f"""/^\\d+s$/.test(document.querySelector(
                    'tr.election[data-key="{key}"] td.held').textContent)""",
                                 message="held-for not taken from GrantedAt")
            else:
                print("\nno /v1/tenure/history on this server: asserting the page's note "
                      "instead of a timeline")
                browser.wait_for("document.getElementById('timeline-note').textContent"
                                 ".includes('keeps no lock history')")
            # Held for a few seconds, ticking in the page without a request.
            browser.wait_for(f"""/(^|\\s)([3-9]|\\d\\d)s$/.test(document.querySelector(
                'tr.election[data-key="{key}"] td.held').textContent)""", timeout=15,
                             message="the held-for cell does not tick")
            browser.screenshot(os.path.join(self.shots, "dashboard-alice.png"))

            # Kill alice's supervisor by its PID (SIGTERM: it stops its child
            # and releases): bob's name must appear in the holder cell.
            os.kill(alice.pid, signal.SIGTERM)
            alice.communicate(timeout=30)
            browser.wait_for(f"""(() => {{ const e = document.querySelector(
                'tr.election[data-key="{key}"] td.holder');
                return e && e.textContent.startsWith('bob @ '); }})()""",
                             timeout=30, message="bob never shown as the holder")
            bob_session, bob_name, bob_fence = self.holder(server)
            self.assertEqual(bob_name, "bob")
            self.assertGreater(bob_fence, fence)
            self.assertEqual(self.row_text(browser, key, "fence"), str(bob_fence))
            # The cluster panel is read again after the blocking answers:
            # its commit index has passed bob's grant.
            browser.wait_for(f"Number(document.getElementById('cluster-commit').textContent)"
                             f" >= {bob_fence}", timeout=10, message="cluster panel not refreshed")
            browser.wait_for(f"!document.querySelector('tr.session[data-id=\"{session}\"]')",
                             message="alice's destroyed session still listed")
            if history:
                browser.wait_for(f"document.querySelectorAll('.timeline[data-key=\"{key}\"] li')"
                                 ".length >= 2")
                items = browser.evaluate(f"[...document.querySelectorAll("
                                         f"'.timeline[data-key=\"{key}\"] li')]"
                                         ".map(e => e.textContent)")
                # tenure run releases on SIGTERM, then destroys its session;
                # bob waited in the fair queue, so the release handed it over.
                self.assertRegex(items[-2],
                                 rf"^fence {fence} · .+ \((handoff|release|destroy)\)$")
                self.assertRegex(items[-1], rf"^fence {bob_fence} · .+ → now \(held\)$")
            browser.screenshot(os.path.join(self.shots, "dashboard-bob.png"))

            # A crash: SIGKILL bob's supervisor by its PID (its child dies
            # with it). Nobody releases: the server expires bob's session
            # after its TTL (multiplier 1 here) and carol's appears on screen.
            carol = self.candidate(server, "carol")
            browser.wait_for(f"""document.querySelector(
                'tr.election[data-key="{key}"] td.waiting').textContent === 'carol'""",
                             message="carol not shown waiting")
            os.kill(bob.pid, signal.SIGKILL)
            bob.communicate(timeout=30)
            browser.wait_for(f"""(() => {{ const e = document.querySelector(
                'tr.election[data-key="{key}"] td.holder');
                return e && e.textContent.startsWith('carol @ '); }})()""",
                             timeout=40, message="carol never shown after bob's TTL ran out")
            carol_session, carol_name, carol_fence = self.holder(server)
            self.assertEqual(carol_name, "carol")
            self.assertGreater(carol_fence, bob_fence)
            browser.wait_for(f"!document.querySelector('tr.session[data-id=\"{bob_session}\"]')",
                             message="bob's expired session still shown")
            if history:
                browser.wait_for(f"[...document.querySelectorAll('.timeline[data-key=\"{key}\"]"
                                 f" li')].some(e => e.textContent.startsWith('fence {bob_fence}')"
                                 " && e.textContent.endsWith('(ttl-expiry)'))",
                                 message="bob's grant not shown ended by ttl-expiry")

            # Invalidate carol's session: two clicks (the first arms the button).
            button = f'tr.session[data-id="{carol_session}"] button.invalidate'
            browser.click(button)
            self.assertEqual(browser.text(button), "Confirm invalidate")
            self.assertIsNotNone(self.holder(server), "one click must not invalidate")
            browser.click(button)
            poll_until(lambda: server.request("GET", f"/v1/session/info/{carol_session}").json()
                       in (None, []), timeout=10, message="carol's session still exists")
            browser.wait_for(f"!document.querySelector('tr.session[data-id=\"{carol_session}\"]')",
                             message="carol's invalidated session still shown")
            # carol's supervisor sees its session gone: lost leadership, exit 1.
            self.assertEqual(carol.wait(timeout=30), 1)
            browser.wait_for("document.querySelectorAll('tr.election').length === 0",
                             message="the invalidated holder's key still shown held")
            self.assertEqual(browser.evaluate("window.pageProblems"), [])

    def test_timeline_against_the_history_contract(self):
        """The page's side of GET /v1/tenure/history/<key>, whether or not
        this server has it: a script injected before the page's own answers
        that path with records in the endpoint's contract (one ended grant,
        then the key's real holder granted 42 s ago), built from the real KV
        entry, and counts the requests. Everything else is the real server."""
        fake = """(() => {
          const realFetch = window.fetch.bind(window);
          window.historyAsked = [];
          window.fetch = async (url, options = {}) => {
            const path = String(url);
            if (!path.startsWith('/v1/tenure/history/')) return realFetch(url, options);
            const key = path.slice('/v1/tenure/history/'.length);
            window.historyAsked.push(key);
            const kv = await (await realFetch('/v1/kv/' + key, {headers: options.headers})).json();
            const e = kv[0], now = Date.now(), iso = (ms) => new Date(now - ms).toISOString();
            const records = [{Fence: 2, Session: 'dead-session', SessionName: 'zed', Node: 'old-node',
                              GrantedAt: iso(120000), GrantIndex: 2, EndedAt: iso(60000),
                              EndIndex: 3, EndCause: 'ttl-expiry'}];
            if (e.Session) records.push({Fence: e.Fence, Session: e.Session,
                                         SessionName: 'tenure run web', Node: 'vm',
                                         GrantedAt: iso(42000), GrantIndex: e.Fence,
                                         EndedAt: null, EndIndex: 0, EndCause: ''});
            return new Response(JSON.stringify(records),
                                {status: 200, headers: {'Content-Type': 'application/json'}});
          };
        })();"""
        with DevServer() as server, Browser(width=1100) as browser:
            key = "service/web/leader"
            alice = self.candidate(server, "alice")
            poll_until(lambda: self.holder(server), timeout=30, message="alice never elected")
            self.candidate(server, "bob")
            fence = self.holder(server)[2]
            browser.before_every_page(fake)
            browser.navigate(f"http://{server.http_addr}/ui/")
            browser.wait_for(f"document.querySelectorAll('.timeline[data-key=\"{key}\"] li')"
                             ".length === 2", message="no timeline drawn")
            items = browser.evaluate(f"[...document.querySelectorAll('.timeline[data-key="
                                     f"\"{key}\"] li')].map(e => e.textContent)")
            self.assertRegex(items[0], r"^fence 2 · zed @ old-node · .+ → .+ \(ttl-expiry\)$")
            self.assertRegex(items[1], rf"^fence {fence} · tenure run web @ vm · .+ → now \(held\)$")
            self.assertEqual(browser.evaluate(
                f"document.querySelectorAll('.timeline[data-key=\"{key}\"] rect').length"), 2)
            # Held for: from GrantedAt (exact, no "≥"), 42 s and ticking.
            held = browser.wait_for(f"""(() => {{ const t = document.querySelector(
                'tr.election[data-key="{key}"] td.held').textContent;
                return /^4[2-9]s$/.test(t) && t; }})()""", message="held-for not from GrantedAt")
            self.assertRegex(held, r"^4[2-9]s$")
            self.assertEqual(browser.text("#timeline-note"), "")
            # Fetched once per holder, not in a loop, and only for elections.
            asked = browser.evaluate("window.historyAsked")
            self.assertEqual(asked, [key], "one fetch, and none for the candidates' keys")
            self.assertEqual(browser.evaluate("document.querySelectorAll('.timeline').length"), 1)
            os.kill(alice.pid, signal.SIGTERM)
            alice.communicate(timeout=30)
            browser.wait_for(f"""document.querySelector('tr.election[data-key="{key}"] td.holder')
                .textContent.startsWith('bob @ ')""", message="bob never shown as the holder")
            browser.wait_for(f"window.historyAsked.filter(k => k === '{key}').length >= 2",
                             message="the holder's change did not fetch the history again")
            self.assertEqual(set(browser.evaluate("window.historyAsked")), {key})
            self.assertEqual(browser.evaluate("document.querySelectorAll('.timeline').length"), 1)
            browser.wait_for("Number(document.getElementById('cluster-commit').textContent)"
                             f" >= {self.holder(server)[2]}", timeout=10)
            browser.screenshot(os.path.join(self.shots, "dashboard-timeline.png"))

    def test_acl_read_only_token_sees_the_refusal(self):
        with DevServer(extra_args=["-acl-enabled", "-acl-default-policy", "deny",
                                   "-acl-initial-management", MANAGEMENT]) as server, \
                Browser(width=1100) as browser:
            mgmt = {"X-Consul-Token": MANAGEMENT}
            poll_until(lambda: server.request("GET", "/v1/acl/token/self",
                                              headers=mgmt).status == 200, timeout=30)
            rules = ('key_prefix "" { policy = "read" }\nsession_prefix "" { policy = "read" }\n'
                     'operator = "read"')
            policy = server.request("PUT", "/v1/acl/policy", headers=mgmt,
                                    body=json.dumps({"Name": "dash-ro", "Rules": rules}))
            self.assertEqual(policy.status, 200, policy.text)
            token = server.request("PUT", "/v1/acl/token", headers=mgmt, body=json.dumps(
                {"Policies": [{"Name": "dash-ro"}]}))
            self.assertEqual(token.status, 200, token.text)
            secret, accessor = token.json()["SecretID"], token.json()["AccessorID"]
            key = "service/acl/leader"
            self.candidate(server, "carol", election="acl", token=MANAGEMENT)
            poll_until(lambda: self.holder(server, "acl", mgmt), timeout=30,
                       message="carol never elected")
            session = self.holder(server, "acl", mgmt)[0]

            browser.before_every_page(PAGE_PROBLEMS)
            browser.navigate(f"http://{server.http_addr}/ui/")
            # Without a token the anonymous one may read nothing: the cluster
            # panel shows the server's refusal and no election is listed.
            browser.wait_for("document.getElementById('cluster-error').textContent"
                             ".includes('403: Permission denied: anonymous token lacks "
                             "permission \\'operator:read\\'')")
            self.assertEqual(browser.evaluate("document.querySelectorAll('tr.election').length"),
                             0)
            browser.evaluate(f"document.getElementById('token').value = {json.dumps(secret)}")
            browser.evaluate("document.getElementById('token-form').requestSubmit()")
            browser.wait_for(f"document.querySelector('tr.election[data-key=\"{key}\"]')")
            node = server.request("GET", f"/v1/session/info/{session}",
                                  headers=mgmt).json()[0]["Node"]
            self.wait_row_text(browser, key, "holder", f"carol @ {node}")
            self.assertEqual(browser.evaluate("sessionStorage.getItem('tenure-token')"), secret)
            button = f'tr.session[data-id="{session}"] button.invalidate'
            browser.wait_for(f"document.querySelector('{button}')")
            browser.click(button)
            browser.click(button)
            error = browser.wait_for(f"""(() => {{ const e = document.querySelector(
                'tr.session[data-id="{session}"] .row-error'); return e && e.textContent; }})()""")
            self.assertEqual(error, f"403: Permission denied: token with AccessorID '{accessor}' "
                                    f"lacks permission 'session:write' on {json.dumps(node)}")
            self.assertEqual(self.holder(server, "acl", mgmt)[0], session, "nothing changed")
            self.assertEqual(browser.evaluate("window.pageProblems"), [])
            browser.screenshot(os.path.join(self.shots, "dashboard-acl-denied.png"))




class TtlRemainingTest(unittest.TestCase):
    """TTLRemaining on session reads (docs/consul-compat.md): the leader's
    session timer, at most TTL x multiplier, counting down; no field for a
    session without a TTL, nor from a follower answering ?stale."""

    def test_leader_sends_it_followers_forward_or_leave_it_out(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            sid = leader.request("PUT", "/v1/session/create", b'{"TTL": "10s"}').json()["ID"]
            plain = leader.request("PUT", "/v1/session/create", b"{}").json()["ID"]
            # At most TTL x multiplier, just under it right after the create,
            # and it runs down.
            mult = leader.get_json("/v1/agent/self")["DebugConfig"]["SessionTTLMultiplier"]
            first = leader.get_json(f"/v1/session/info/{sid}")[0]["TTLRemaining"]
            self.assertGreater(first, (10 * mult - 2) * 10**9)
            self.assertLessEqual(first, 10 * mult * 10**9)
            poll_until(lambda: leader.get_json(f"/v1/session/info/{sid}")[0]["TTLRemaining"]
                       < first - 200 * 10**6, timeout=5, message="TTLRemaining does not run down")
            # A renewal moves it back up.
            before = leader.get_json(f"/v1/session/info/{sid}")[0]["TTLRemaining"]
            self.assertEqual(leader.request("PUT", f"/v1/session/renew/{sid}").status, 200)
            self.assertGreater(leader.get_json(f"/v1/session/info/{sid}")[0]["TTLRemaining"],
                               before)
            for path in ("/v1/session/list", f"/v1/session/info/{sid}",
                         "/v1/session/node/" + leader.get_json(
                             f"/v1/session/info/{sid}")[0]["Node"]):
                by_id = {s["ID"]: s for s in leader.get_json(path)}
                self.assertIn("TTLRemaining", by_id[sid], path)
                if plain in by_id:
                    self.assertNotIn("TTLRemaining", by_id[plain], path)
                # A follower forwards the read: the leader's answer, with the field.
                forwarded = {s["ID"]: s for s in follower.get_json(path)}
                self.assertIn("TTLRemaining", forwarded[sid], path)
                # ?stale: the follower answers itself and has no session timers.
                sep = "&" if "?" in path else "?"
                stale = {}
                poll_until(lambda: stale.update(
                    {s["ID"]: s for s in follower.get_json(path + sep + "stale")}) or sid in stale,
                    timeout=10, message="the follower never applied the session")
                self.assertNotIn("TTLRemaining", stale[sid], path)
                self.assertEqual(stale[sid]["TTL"], "10s")


if __name__ == "__main__":
    unittest.main()
