"""README.md's "Try Consul's leader-election walkthrough": its curl block pasted into a
fresh `tenure server -dev`, as a new user would, right after the server has
a leader. Only the server's address changes (localhost:8500 becomes the test
server's 127.0.0.1 port); `<ID>` becomes the session id of the first answer
and `<ModifyIndex>` the key's ModifyIndex in the answer before, as the README
tells the reader.

Every answer the README shows is checked against the real one: `true`, the
session's `{"ID": ...}` (any id), and the key's entry field by field, its
indexes included (the session's id where the README elides it with "...").
The blocking query must still wait a second after it was sent and answer
within five of the release that follows it. A README index that does not
match a fresh server's (an example written against an older build) blocks
the reader's paste until the wait runs out; this test fails instead.
"""
import json
import os
import re
import subprocess
import time
import unittest

from tenure_testlib import DevServer, poll_until

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "README.md")
CMD_TIMEOUT_S = 10
STILL_BLOCKED_S = 1.0
WAKE_DEADLINE_S = 5.0


def walkthrough_steps(readme_text):
    """[(command, expected output or None)] of the section's first sh block:
    each `curl` line with the `# ` comment lines under it joined."""
    start = readme_text.index("\n## Try Consul's leader-election walkthrough")
    end = readme_text.find("\n## ", start + 1)
    section = readme_text[start:end]
    blocks = re.findall(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    curl_block = next(b for b in blocks if b.lstrip().startswith("curl"))
    steps = []
    for line in curl_block.splitlines():
        if line.startswith("curl"):
            command = re.sub(r"\s+#\s.*$", "", line)  # a trailing remark for the reader
            steps.append([command, None])
        elif line.startswith("#") and steps:
            text = line[1:].strip()
            steps[-1][1] = text if steps[-1][1] is None else steps[-1][1] + text
    return [tuple(step) for step in steps]


class ReadmeWalkthroughTest(unittest.TestCase):
    def setUp(self):
        with open(README, encoding="utf-8") as f:
            self.steps = walkthrough_steps(f.read())
        self.server = DevServer().start()
        self.blocked = None

    def tearDown(self):
        if self.blocked is not None and self.blocked.poll() is None:
            self.blocked.kill()
            self.blocked.communicate()
        self.server.close()

    def substitute(self, command, values):
        command = command.replace("localhost:8500", self.server.http_addr)
        for name, value in values.items():
            command = command.replace(f"<{name}>", value)
        self.assertNotRegex(command, r"<\w+>", "a placeholder the README did not explain")
        return command

    def check_answer(self, command, expected, got, values):
        if expected is None:
            return
        if not expected.startswith(("{", "[")):
            self.assertEqual(got.strip(), expected, command)
            return
        want, have = json.loads(expected), json.loads(got)
        if isinstance(want, dict):  # the session create: {"ID": "<any id>"}
            self.assertEqual(sorted(have), sorted(want), got)
            return
        self.assertEqual(len(have), len(want), got)
        for want_entry, have_entry in zip(want, have):
            self.assertEqual(sorted(have_entry), sorted(want_entry), got)
            for field, value in want_entry.items():
                if isinstance(value, str) and value.endswith("..."):
                    self.assertEqual(have_entry[field], values["ID"], field)
                else:
                    self.assertEqual(have_entry[field], value,
                                     f"{field} of {command}: the README shows {value}, a fresh "
                                     f"server answers {have_entry[field]}")

    def test_the_readme_block_pasted_into_a_fresh_server(self):
        values = {}
        blocking_step = next(i for i, (c, _) in enumerate(self.steps) if "?index=" in c)
        self.assertLess(blocking_step + 1, len(self.steps), "no change after the blocking query")
        for i, (template, expected) in enumerate(self.steps):
            command = self.substitute(template, values)
            if i == blocking_step:
                self.start_blocking(command, values)
                continue
            out = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                                 timeout=CMD_TIMEOUT_S)
            self.assertEqual(out.returncode, 0, f"{command}: {out.stderr}")
            self.check_answer(command, expected, out.stdout, values)
            answer = json.loads(out.stdout) if out.stdout.startswith(("{", "[")) else None
            if isinstance(answer, dict) and "ID" in answer:
                values["ID"] = answer["ID"]
            if isinstance(answer, list) and answer:
                values["ModifyIndex"] = str(answer[0]["ModifyIndex"])
        self.await_blocking(values)

    def start_blocking(self, command, values):
        # A literal index in the README must be the one the answer before showed.
        literal = re.search(r"\?index=(\d+)", command)
        if literal:
            self.assertEqual(literal.group(1), values.get("ModifyIndex"),
                             "the README's ?index= is not the ModifyIndex of the answer before")
        self.blocked = subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.blocked_index = int(values["ModifyIndex"])
        deadline = time.monotonic() + STILL_BLOCKED_S
        while time.monotonic() < deadline:
            self.assertIsNone(self.blocked.poll(), "the blocking query answered before any change")
            time.sleep(0.05)

    def await_blocking(self, values):
        poll_until(lambda: self.blocked.poll() is not None, timeout=WAKE_DEADLINE_S,
                   message="the blocking query answers after the release")
        out, err = self.blocked.communicate()
        self.assertEqual(self.blocked.returncode, 0, err)
        entry = json.loads(out)[0]
        self.assertNotIn("Session", entry, out)
        self.assertGreater(entry["ModifyIndex"], self.blocked_index, out)


if __name__ == "__main__":
    unittest.main()
