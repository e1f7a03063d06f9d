"""`tenure acl` and the tokens of every client command, against a real server
started with `-acl-enabled -acl-default-policy deny` (docs/cli.md):

  - bootstrap (Consul's pretty output, -format json, the refusal of a second one
    with Consul's text, and one more after the reset file);
  - policies from a rules file, tokens linked by name, read/update/clone/delete/list,
    IDs given by prefix, Consul's error texts;
  - `kv put` with -token, -token-file, $CONSUL_HTTP_TOKEN, $CONSUL_HTTP_TOKEN_FILE
    and the TENURE_ forms, in Consul's precedence, and refused without a token
    with the server's 403 text; unreadable and empty token files;
  - `tenure run` with a candidate's minimal token campaigns and runs its child,
    and without the token (or with one that may not write the election's keys)
    exits 1 with the 403 text; `tenure elect`, `leader`, `leader-get`, `session`,
    `watch` and `members` with token files.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_acl_cli
"""

import json
import os
import re
import signal
import subprocess

from tenure_testlib import SharedServerTestCase, poll_until, tenure_bin

ANONYMOUS_ID = "00000000-0000-0000-0000-000000000002"
GLOBAL_MANAGEMENT_ID = "00000000-0000-0000-0000-000000000001"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# Go's time.Time String() of a UTC time: "2023-11-14 22:13:20.123 +0000 UTC".
GO_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC"


def anonymous_denied(permission, resource=None):
    """The server's 403 text for a request without a token (Consul's)."""
    on = f' on "{resource}"' if resource is not None else ""
    return (f"Permission denied: anonymous token lacks permission '{permission}'{on}. "
            "The anonymous token is used implicitly when a request does not specify a token.")


def parse_token(text):
    """Consul's pretty token output: {"AccessorID": ..., ..., "Policies": [(id, name)]}.
    Checks the layout: every label's value starts at column 18, policies are
    indented by 3 and the output ends with a blank line."""
    fields, policies = {}, []
    lines = text.split("\n")
    assert lines[-2:] == ["", ""], repr(text)
    in_policies = False
    for line in lines[:-2]:
        if line == "Policies:":
            in_policies = True
            continue
        if in_policies:
            m = re.fullmatch(r"   (\S+) - (\S+)", line)
            assert m, repr(line)
            policies.append((m.group(1), m.group(2)))
            continue
        label, value = line[:18], line[18:]
        assert re.fullmatch(r"[A-Za-z ]+:\s*", label), repr(line)
        fields[label.split(":")[0]] = value
    fields["Policies"] = policies
    return fields


def parse_policy(text):
    """Consul's pretty policy output: labels at column 14, then "Rules:" and the rules."""
    head, rules = text.split("Rules:\n", 1)
    fields = {}
    for line in head.split("\n")[:-1]:
        label, value = line[:14], line[14:]
        assert re.fullmatch(r"[A-Za-z ]+:\s*", label), repr(line)
        fields[label.split(":")[0]] = value
    fields["Rules"] = rules[:-1]  # the newline after the rules
    return fields


class AclCliTest(SharedServerTestCase):
    server_args = ("-acl-enabled", "-acl-default-policy", "deny", "-session-ttl-multiplier", "1")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bootstrap = cls.server.cli("acl", "bootstrap")
        m = re.search(r"^SecretID:\s+(" + UUID + ")$", cls.bootstrap.stdout, re.M)
        if cls.bootstrap.returncode != 0 or not m:
            raise AssertionError(f"acl bootstrap: {cls.bootstrap!r}")
        cls.management = m.group(1)

    # --- helpers ---------------------------------------------------------------

    def cli(self, *args, token=None, env=None, timeout=30.0):
        if token is not None:
            args = (*args, "-token", token)
        return self.server.cli(*args, env=env, timeout=timeout)

    def ok(self, *args, **kwargs):
        proc = self.cli(*args, **kwargs)
        self.assertEqual(proc.returncode, 0, f"tenure {' '.join(args)}: {proc.stderr}")
        self.assertEqual(proc.stderr, "")
        return proc.stdout

    def fails(self, *args, stderr, code=1, **kwargs):
        """Runs a command that must fail with exactly `stderr` (a line) and no stdout."""
        proc = self.cli(*args, **kwargs)
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (code, "", stderr + "\n"),
                         f"tenure {' '.join(args)}")
        return proc

    def write(self, name, text, mode=0o600):
        path = os.path.join(self.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def policy(self, name, rules):
        """Creates a policy from a rules file; returns its ID."""
        out = self.ok("acl", "policy", "create", "-name", name, "-rules",
                      "@" + self.write(name + ".hcl", rules), token=self.management)
        return parse_policy(out)["ID"]

    def token(self, *policy_names, description=""):
        """Creates a token linked to the named policies; returns (AccessorID, SecretID)."""
        args = ["acl", "token", "create", "-description", description]
        for name in policy_names:
            args += ["-policy-name", name]
        fields = parse_token(self.ok(*args, token=self.management))
        return fields["AccessorID"], fields["SecretID"]

    # --- bootstrap ---------------------------------------------------------------

    def test_bootstrap_prints_the_management_token_once(self):
        fields = parse_token(self.bootstrap.stdout)
        self.assertEqual(self.bootstrap.stderr, "")
        self.assertRegex(fields["AccessorID"], "^" + UUID + "$")
        self.assertEqual(fields["SecretID"], self.management)
        self.assertEqual(fields["Description"], "Bootstrap Token (Global Management)")
        self.assertEqual(fields["Local"], "false")
        self.assertRegex(fields["Create Time"], "^" + GO_TIME + "$")
        self.assertEqual(fields["Policies"], [(GLOBAL_MANAGEMENT_ID, "global-management")])
        self.assertEqual(list(fields)[:5],
                         ["AccessorID", "SecretID", "Description", "Local", "Create Time"])

        # A second one is refused with Consul's text and the reset index.
        again = self.cli("acl", "bootstrap", "-format", "json")
        self.assertEqual((again.returncode, again.stdout), (1, ""))
        m = re.fullmatch(r"Failed ACL bootstrapping: Unexpected response code: 403 \(Permission "
                         r"denied: ACL bootstrap no longer allowed \(reset index: (\d+)\)\)\n",
                         again.stderr)
        self.assertTrue(m, again.stderr)

        # The reset file allows one more: -format json prints what Consul's does.
        with open(os.path.join(self.server.data_dir, "acl-bootstrap-reset"), "w") as f:
            f.write(m.group(1) + "\n")
        out = self.ok("acl", "bootstrap", "-format", "json")
        token = json.loads(out)
        self.assertEqual(list(token)[:4], ["CreateIndex", "ModifyIndex", "AccessorID", "SecretID"])
        self.assertTrue(out.startswith('{\n    "CreateIndex": '), out)
        self.assertEqual(token["Description"], "Bootstrap Token (Global Management)")
        self.assertEqual(token["Policies"], [{"ID": GLOBAL_MANAGEMENT_ID,
                                              "Name": "global-management"}])
        self.assertNotEqual(token["SecretID"], self.management)
        # Both management tokens work.
        self.ok("acl", "token", "read", "-self", token=token["SecretID"])
        self.ok("acl", "token", "read", "-self", token=self.management)

    # --- policies and tokens -----------------------------------------------------

    def test_policies_and_tokens_from_create_to_delete(self):
        rules = 'key_prefix "app/" {\n  policy = "write"\n}\n'
        out = self.ok("acl", "policy", "create", "-name", "app-writer", "-description",
                      "writes app/", "-rules", "@" + self.write("app.hcl", rules),
                      token=self.management)
        policy = parse_policy(out)
        self.assertRegex(policy["ID"], "^" + UUID + "$")
        self.assertEqual((policy["Name"], policy["Description"], policy["Datacenters"]),
                         ("app-writer", "writes app/", ""))
        self.assertEqual(policy["Rules"], rules)
        policy_id = policy["ID"]

        # Read by name (JSON), by ID prefix, and by -id; -meta adds the indexes.
        by_name = json.loads(self.ok("acl", "policy", "read", "-name", "app-writer", "-format",
                                     "json", token=self.management))
        self.assertEqual((by_name["ID"], by_name["Rules"]), (policy_id, rules))
        by_prefix = parse_policy(self.ok("acl", "policy", "read", "-id", policy_id[:8], "-meta",
                                         token=self.management))
        self.assertEqual(by_prefix["ID"], policy_id)
        self.assertRegex(by_prefix["Create Index"], r"^\d+$")

        # Update merges: only the description changes.
        updated = parse_policy(self.ok("acl", "policy", "update", "-id", policy_id,
                                       "-description", "app keys", token=self.management))
        self.assertEqual((updated["Name"], updated["Description"], updated["Rules"]),
                         ("app-writer", "app keys", rules))

        listed = self.ok("acl", "policy", "list", token=self.management)
        self.assertIn(f"app-writer:\n   ID:           {policy_id}\n"
                      f"   Description:  app keys\n   Datacenters:  \n", listed)
        self.assertIn(f"global-management:\n   ID:           {GLOBAL_MANAGEMENT_ID}\n", listed)

        # A token linked by name.
        reader_id = self.policy("app-reader", 'key_prefix "app/" { policy = "read" }')
        # Repeated flags, a policy ID given by a prefix; names come first, as Consul's.
        both = parse_token(self.ok("acl", "token", "create", "-policy-id", reader_id[:8],
                                   "-policy-name", "app-writer", token=self.management))
        self.assertEqual(both["Policies"], [(policy_id, "app-writer"), (reader_id, "app-reader")])
        self.assertEqual(both["Description"], "")
        token = parse_token(self.ok("acl", "token", "create", "-description", "app token",
                                    "-policy-name", "app-writer", token=self.management))
        accessor, secret = token["AccessorID"], token["SecretID"]
        self.assertEqual(token["Description"], "app token")
        self.assertEqual(token["Policies"], [(policy_id, "app-writer")])

        read = json.loads(self.ok("acl", "token", "read", "-id", accessor, "-format", "json",
                                  token=self.management))
        self.assertEqual(list(read)[:3], ["CreateIndex", "ModifyIndex", "AccessorID"])
        self.assertEqual((read["AccessorID"], read["SecretID"]), (accessor, secret))
        self.assertEqual(parse_token(self.ok("acl", "token", "read", "-self", token=secret))
                         ["AccessorID"], accessor)
        self.assertEqual(parse_token(self.ok("acl", "token", "read", "-id", accessor[:8],
                                             token=self.management))["AccessorID"], accessor)

        # Update: -policy-name replaces, -append-policy-name adds, the secret stays.
        replaced = parse_token(self.ok("acl", "token", "update", "-id", accessor,
                                       "-description", "renamed", "-policy-name", "app-reader",
                                       token=self.management))
        self.assertEqual((replaced["Description"], replaced["SecretID"]), ("renamed", secret))
        self.assertEqual([name for _, name in replaced["Policies"]], ["app-reader"])
        appended = parse_token(self.ok("acl", "token", "update", "-id", accessor,
                                       "-append-policy-name", "app-writer",
                                       token=self.management))
        self.assertEqual([name for _, name in appended["Policies"]], ["app-reader", "app-writer"])
        self.assertEqual(appended["Description"], "renamed")

        clone = parse_token(self.ok("acl", "token", "clone", "-id", accessor, "-description",
                                    "a copy", token=self.management))
        self.assertNotIn(clone["AccessorID"], (accessor, ""))
        self.assertNotEqual(clone["SecretID"], secret)
        self.assertEqual(clone["Description"], "a copy")
        self.assertEqual(clone["Policies"], appended["Policies"])

        listed = self.ok("acl", "token", "list", token=self.management)
        for expected in (accessor, clone["AccessorID"], ANONYMOUS_ID):
            self.assertIn(f"AccessorID:       {expected}\n", listed)
        tokens = json.loads(self.ok("acl", "token", "list", "-format", "json",
                                    token=self.management))
        self.assertIn(clone["AccessorID"], [t["AccessorID"] for t in tokens])
        anonymous = parse_token(self.ok("acl", "token", "read", "-id", "anonymous",
                                        token=self.management))
        self.assertEqual((anonymous["AccessorID"], anonymous["Policies"]), (ANONYMOUS_ID, []))

        # Delete: Consul's message; the token is gone, its secret refused.
        self.assertEqual(self.ok("acl", "token", "delete", "-id", clone["AccessorID"],
                                 token=self.management),
                         f'Token "{clone["AccessorID"]}" deleted successfully\n')
        self.fails("acl", "token", "read", "-id", clone["AccessorID"], token=self.management,
                   stderr=f'Error reading token "{clone["AccessorID"]}": Unexpected response '
                          "code: 403 (ACL not found)")
        self.fails("acl", "token", "read", "-self", token=clone["SecretID"],
                   stderr="Error reading token: Unexpected response code: 403 (ACL not found)")
        self.assertEqual(self.ok("acl", "policy", "delete", "-name", "app-reader",
                                 token=self.management),
                         f'Policy "{reader_id}" deleted successfully\n')
        left = parse_token(self.ok("acl", "token", "read", "-id", accessor,
                                   token=self.management))
        self.assertEqual(left["Policies"], [(policy_id, "app-writer")])

    def test_errors_are_consul_s(self):
        self.fails("acl", "token", "create", "-policy-name", "no-such-policy",
                   token=self.management,
                   stderr="Failed to create new token: Unexpected response code: 400 (No such "
                          'ACL policy with name "no-such-policy")')
        self.fails("acl", "token", "list",
                   stderr="Failed to retrieve the token list: Unexpected response code: 403 ("
                          + anonymous_denied("acl:read") + ")")
        self.fails("acl", "policy", "list", token="11111111-2222-3333-4444-555555555555",
                   stderr="Failed to retrieve the policy list: Unexpected response code: 403 "
                          "(ACL not found)")
        broken = self.cli("acl", "policy", "create", "-name", "broken", "-rules",
                          'key "a" { policy = 1 }', token=self.management)
        self.assertTrue(broken.stderr.startswith(
            "Failed to create new policy: Unexpected response code: 400 (Failed to parse ACL "
            "rules: line 1, column "), broken.stderr)
        self.fails("acl", "token", "read", "-id", "ffff", token=self.management,
                   stderr='Error determining token ID: no token ID starts with "ffff"')
        self.fails("acl", "token", "read", stderr="Give exactly one of -id ID and -self")
        self.fails("acl", "policy", "create", stderr="Missing required -name flag")
        self.fails("acl", "token", "list", "-format", "yaml",
                   stderr='Invalid format "yaml": expected pretty or json')
        missing = os.path.join(self.dir, "missing")
        self.fails("acl", "policy", "create", "-name", "x", "-rules", "@" + missing,
                   stderr=f"Error loading rules: Failed to read file: open {missing}: No such "
                          "file or directory")
        # Usage goes to stdout with exit 0 at every level.
        for argv in (["acl"], ["acl", "token"], ["acl", "policy"]):
            proc = self.cli(*argv, "-h")
            self.assertEqual((proc.returncode, proc.stderr), (0, ""), argv)
            self.assertTrue(proc.stdout.startswith("Usage: tenure acl"), proc.stdout)
        self.fails("acl", "nope", stderr='tenure acl: unknown subcommand "nope"\n\n'
                   + self.cli("acl", "-h").stdout.rstrip("\n"))

    # --- tokens for every client command ------------------------------------------

    def test_kv_put_takes_its_token_from_every_source_in_consul_s_order(self):
        self.policy("kv-writer", 'key_prefix "tokens/" { policy = "write" }')
        _, good = self.token("kv-writer", description="kv writer")
        bad = "11111111-2222-3333-4444-555555555555"
        good_file = self.write("good.token", f"  {good}\n")
        bad_file = self.write("bad.token", bad + "\n")

        self.fails("kv", "put", "tokens/a", "x",
                   stderr="Error! Failed writing data: Unexpected response code: 403 ("
                          + anonymous_denied("key:write", "tokens/a") + ")")
        not_found = "Error! Failed writing data: Unexpected response code: 403 (ACL not found)"
        success = "Success! Data written to: tokens/a\n"

        cases = [
            # (flags, environment, succeeds)
            (["-token", good], {}, True),
            (["-token-file", good_file], {}, True),
            ([], {"CONSUL_HTTP_TOKEN": good}, True),
            ([], {"CONSUL_HTTP_TOKEN_FILE": good_file}, True),
            ([], {"TENURE_HTTP_TOKEN": good}, True),
            ([], {"TENURE_HTTP_TOKEN_FILE": good_file}, True),
            # Precedence: -token, -token-file, TENURE_ (value, file), CONSUL_ (value, file).
            (["-token", good, "-token-file", bad_file], {"TENURE_HTTP_TOKEN": bad}, True),
            (["-token", bad, "-token-file", good_file], {}, False),
            (["-token-file", good_file], {"TENURE_HTTP_TOKEN": bad}, True),
            ([], {"TENURE_HTTP_TOKEN": good, "TENURE_HTTP_TOKEN_FILE": bad_file}, True),
            ([], {"TENURE_HTTP_TOKEN_FILE": good_file, "CONSUL_HTTP_TOKEN": bad}, True),
            ([], {"CONSUL_HTTP_TOKEN": good, "CONSUL_HTTP_TOKEN_FILE": bad_file}, True),
            ([], {"CONSUL_HTTP_TOKEN": bad, "TENURE_HTTP_TOKEN_FILE": good_file}, True),
            ([], {"CONSUL_HTTP_TOKEN_FILE": bad_file}, False),
        ]
        for flags, env, succeeds in cases:
            with self.subTest(flags=flags, env=env):
                proc = self.cli("kv", "put", *flags, "tokens/a", "x", env=env)
                if succeeds:
                    self.assertEqual((proc.returncode, proc.stdout, proc.stderr),
                                     (0, success, ""))
                else:
                    self.assertEqual((proc.returncode, proc.stdout, proc.stderr),
                                     (1, "", not_found + "\n"))

        # A token file that cannot be used is an error that names it.
        missing = os.path.join(self.dir, "missing.token")
        empty = self.write("empty.token", " \n")
        self.fails("kv", "put", "-token-file", missing, "tokens/a", "x",
                   stderr=f"Error! Failed writing data: cannot read the token file {missing} "
                          "(from -token-file): No such file or directory")
        self.fails("kv", "put", "tokens/a", "x", env={"CONSUL_HTTP_TOKEN_FILE": empty},
                   stderr=f"Error! Failed writing data: the token file {empty} (from "
                          "$CONSUL_HTTP_TOKEN_FILE) is empty")
        self.fails("kv", "get", "tokens/a", env={"TENURE_HTTP_TOKEN_FILE": missing},
                   stderr=f"Error querying Consul agent: cannot read the token file {missing} "
                          "(from $TENURE_HTTP_TOKEN_FILE): No such file or directory")

    def test_other_client_commands_take_token_files(self):
        mgmt_file = self.write("management.token", self.management + "\n")
        # kv get and watch (which exits after printing when it has no handler).
        self.ok("kv", "put", "-token-file", mgmt_file, "watched/k", "v1")
        self.assertEqual(self.ok("kv", "get", "-token-file", mgmt_file, "watched/k"), "v1\n")
        watched = json.loads(self.ok("watch", "-type", "key", "-key", "watched/k",
                                     env={"CONSUL_HTTP_TOKEN_FILE": mgmt_file}))
        self.assertEqual(watched["Key"], "watched/k")
        # session (tenure's own: exit 1 for a refused request).
        refused = self.cli("session", "create", "-name", "s")
        self.assertEqual((refused.returncode, refused.stdout), (1, ""))
        self.assertRegex(refused.stderr, "^Error! Failed to create session: Unexpected response "
                         "code: 403 " + re.escape("(Permission denied: anonymous token lacks "
                                                  "permission 'session:write' on \""))
        session = self.ok("session", "create", "-name", "s", "-token-file", mgmt_file).strip()
        self.assertEqual(self.ok("session", "list"), "[]\n")  # filtered for the anonymous token
        self.assertIn(session, self.ok("session", "list", env={"TENURE_HTTP_TOKEN_FILE":
                                                               mgmt_file}))
        self.ok("session", "destroy", "-token-file", mgmt_file, session)
        # members (operator:read).
        self.fails("members", stderr="Error getting peers: Unexpected response code: 403 ("
                   + anonymous_denied("operator:read") + ")")
        self.assertIn("leader", self.ok("members", "-token-file", mgmt_file))

    def test_run_campaigns_with_a_candidate_token_and_is_refused_without(self):
        name = "aclrun"
        self.policy("candidate-" + name,
                    f'key_prefix "service/{name}/" {{ policy = "write" }}\n'
                    'session_prefix "" { policy = "write" }\n')
        _, candidate = self.token("candidate-" + name, description="candidate of " + name)
        token_file = self.write("candidate.token", candidate + "\n")
        out = os.path.join(self.dir, "child.out")
        child = ["--", "sh", "-c", f'echo "$TENURE_FENCING_TOKEN $TENURE_LEADER_KEY" > {out}']

        for flags, env in ((["-token", candidate], {}), (["-token-file", token_file], {}),
                           ([], {"CONSUL_HTTP_TOKEN_FILE": token_file})):
            with self.subTest(flags=flags, env=env):
                if os.path.exists(out):
                    os.remove(out)
                proc = self.cli("run", name, "-ttl", "10s", "-lock-delay", "0s", *flags, *child,
                                env=env, timeout=60)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("tenure run: elected with fencing token ", proc.stderr)
                with open(out) as f:
                    fence, key = f.read().split()
                self.assertGreater(int(fence), 0)
                self.assertEqual(key, f"service/{name}/leader")

        # Without a token: the session is refused, with the server's text.
        os.remove(out)
        proc = self.cli("run", name, "-ttl", "10s", *child, timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"tenure run: cannot create a session: session create: "
                                      r"HTTP 403: " + re.escape(
                                          "Permission denied: anonymous token lacks permission "
                                          "'session:write' on \"") + r"[^\"]+"
                         + re.escape('". The anonymous token is used implicitly when a request '
                                     "does not specify a token."))
        self.assertFalse(os.path.exists(out))

        # A token that may create sessions but not write the election's keys:
        # the campaign ends at the first 403 instead of retrying for ever.
        self.policy("sessions-only", 'session_prefix "" { policy = "write" }')
        accessor, sessions_only = self.token("sessions-only")
        proc = self.cli("run", name, "-ttl", "10s", "-candidate", "c1", "-token", sessions_only,
                        *child, timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(f"tenure run: campaign failed: campaign for service/{name}/candidates/c1: "
                      f"Permission denied: token with AccessorID '{accessor}' lacks permission "
                      f"'key:write' on \"service/{name}/candidates/c1\"\n", proc.stderr)
        self.assertFalse(os.path.exists(out))

        # An unreadable token file: run does not start (bad usage, exit 2).
        missing = os.path.join(self.dir, "missing.token")
        self.fails("run", name, "-token-file", missing, *child, code=2,
                   stderr=f"tenure run: cannot read the token file {missing} (from -token-file): "
                          "No such file or directory")

    def test_elect_and_leader_commands_with_a_candidate_token(self):
        name = "aclelect"
        self.policy("candidate-" + name,
                    f'key_prefix "service/{name}/" {{ policy = "write" }}\n'
                    'session_prefix "" { policy = "write" }\n')
        _, candidate = self.token("candidate-" + name)
        token_file = self.write("elect.token", candidate + "\n")
        socket_path = os.path.join(self.dir, "elect.sock")
        log_path = os.path.join(self.dir, "elect.log")
        with open(log_path, "ab") as log:
            agent = subprocess.Popen(
                [tenure_bin(), "elect", name, "-ttl", "10s", "-lock-delay", "1s", "-candidate",
                 "c1", "-socket", socket_path, "-token-file", token_file],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.server.cli_env())

        def stop_agent():
            if agent.poll() is None:
                agent.send_signal(signal.SIGTERM)
                try:
                    agent.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()
        self.addCleanup(stop_agent)

        def log_text():
            with open(log_path, errors="replace") as f:
                return f.read()

        poll_until(lambda: self.cli("is-leader", name, "-socket", socket_path).stdout == "True\n",
                   timeout=30, message="elect never led; log:\n" + log_text())
        self.ok("leader-set", name, "db=10.0.0.7", "-socket", socket_path)
        self.assertEqual(self.ok("leader-get", name, "-token-file", token_file), "db=10.0.0.7\n")
        self.assertIn('{"Candidate":"c1"}', self.ok("leader", name, "-token", candidate))
        refused = self.cli("leader", name)
        self.assertEqual(refused.returncode, 1)
        self.assertIn(anonymous_denied("key:read", f"service/{name}/leader"), refused.stderr)
        # Listings are filtered, as Consul's: without a token the settings
        # look empty rather than refused.
        self.assertEqual(self.ok("leader-get", name), "")
        stop_agent()
        self.assertEqual(agent.returncode, 0, log_text())

        # Without a token the agent keeps asking for a session and says why.
        bare_log = os.path.join(self.dir, "bare.log")
        with open(bare_log, "ab") as log:
            bare = subprocess.Popen(
                [tenure_bin(), "elect", name, "-ttl", "10s", "-candidate", "c2", "-socket",
                 os.path.join(self.dir, "bare.sock")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.server.cli_env())
        self.addCleanup(lambda: (bare.poll() is None and bare.kill(), bare.wait()))

        def bare_refused():
            with open(bare_log, errors="replace") as f:
                text = f.read()
            return re.search(r"tenure elect: cannot create a session: session create: HTTP 403: "
                             + re.escape("Permission denied: anonymous token lacks permission "
                                         "'session:write' on"), text)
        poll_until(bare_refused, timeout=20, message="the agent without a token was not refused")
        bare.send_signal(signal.SIGTERM)
        self.assertEqual(bare.wait(timeout=30), 0)


if __name__ == "__main__":
    import unittest
    unittest.main()
