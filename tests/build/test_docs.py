"""The repository stands alone: its files cite no issue tracker numbers and
no files outside it (a reader cannot open either), and every design decision
says whether it still holds (docs/decisions/README.md).

Run: /usr/bin/python3 -m unittest -v test_docs
"""

import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECISIONS = os.path.join(ROOT, "docs", "decisions")

# The word issue (or issues) followed by a number, with or without '#'; a
# public tracker's address (github.com/etcd-io/etcd/issues/11456) is
# something a reader can open.
TRACKER = re.compile(r"\bissues? #?[0-9]+", re.IGNORECASE)
# The documents the project started from, by their file names elsewhere.
OUTSIDE = re.compile(r"\b[0-9]{3}_[0-9a-f]{16}\.txt\b|\.\./shared/")
# Generated measurements, not prose.
SKIPPED = (".json", ".csv", ".png", ".svg")


def tracked_files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.splitlines()
            if not f.endswith(SKIPPED) and os.path.isfile(os.path.join(ROOT, f))]


def citations(text):
    """(line number, line) of every line that cites a tracker or an outside file."""
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1)
            if TRACKER.search(line) or OUTSIDE.search(line)]


def decision_files():
    return sorted(f for f in os.listdir(DECISIONS) if re.fullmatch(r"[0-9]{4}-.*\.md", f))


class DocsTest(unittest.TestCase):
    def test_no_file_cites_the_tracker_or_outside_files(self):
        found = []
        for name in tracked_files():
            try:
                with open(os.path.join(ROOT, name), encoding="utf-8") as f:
                    text = f.read()
            except UnicodeDecodeError:
                continue  # binary (fuzz corpora, images)
            found += ["%s:%d: %s" % (name, number, line) for number, line in citations(text)]
        self.assertEqual(found, [], "name the doc, decision or test instead")

    def test_the_citation_check_can_fail(self):
        # Built from pieces, so that this file cites nothing itself.
        word = "issue"
        self.assertEqual(len(citations("see %s 11\n%s 16's targets\n%ss 3 and 4\n"
                                       % (word, word.title(), word))), 3)
        self.assertEqual(len(citations("the seed %s_%s.txt\n" % ("004", "3f21f8b821ac2f27"))), 1)
        self.assertEqual(citations("github.com/etcd-io/etcd/issues/11456\nPUT issues\n"), [])

    def test_every_decision_has_a_status_under_its_title(self):
        for name in decision_files():
            with self.subTest(decision=name):
                with open(os.path.join(DECISIONS, name), encoding="utf-8") as f:
                    lines = f.read().splitlines()
                self.assertRegex(lines[0], r"^# [0-9]{4}: ")
                self.assertEqual(lines[1], "")
                self.assertRegex(lines[2], r"^Status: (accepted|proposed|superseded|partly "
                                           r"superseded)")

    def test_the_decisions_index_lists_every_decision(self):
        with open(os.path.join(DECISIONS, "README.md"), encoding="utf-8") as f:
            index = f.read()
        linked = set(re.findall(r"\]\(([0-9]{4}-[^)]*\.md)\)", index))
        self.assertEqual(linked, set(decision_files()))


if __name__ == "__main__":
    unittest.main()
