"""Every C++ file is formatted as .clang-format says (clang-format 14, Debian's
clang-format package). A failure names the files; `clang-format -i FILE` fixes them.
And no file in src/ is over about 500 lines without a reason at its top.

Run: CLANG_FORMAT=clang-format /usr/bin/python3 -m unittest -v test_format
"""

import os
import shutil
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ("src", "include", "tests", "bench")


def cxx_files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          "--", *FOLDERS], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split() if f.endswith((".cc", ".h"))
            and os.path.exists(os.path.join(ROOT, f))]


class FormatTest(unittest.TestCase):
    def test_every_file_is_formatted(self):
        tool = os.environ.get("CLANG_FORMAT") or shutil.which("clang-format")
        self.assertTrue(tool, "clang-format is not installed (scripts/setup installs it)")
        files = cxx_files()
        self.assertGreater(len(files), 100)
        unformatted = []
        for start in range(0, len(files), 50):
            batch = files[start:start + 50]
            proc = subprocess.run([tool, "--dry-run", "--Werror", *batch], cwd=ROOT,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                unformatted += sorted({line.split(":")[0] for line in proc.stderr.splitlines()
                                       if ": error:" in line})
        self.assertEqual(unformatted, [], "run clang-format -i on these files")


# Files that do one thing stay small; a longer one says why near its top.
LINES_MAX = 500
LINES_TOLERANCE = 20  # "about 500": a few lines of a comment's growth are no reason to split
REASON = "Why one file over 500 lines:"


class FileSizeTest(unittest.TestCase):
    def test_long_source_files_give_their_reason(self):
        files = [f for f in cxx_files() if f.startswith("src/")]
        self.assertGreater(len(files), 100)
        unexplained = []
        for name in files:
            with open(os.path.join(ROOT, name), encoding="utf-8") as f:
                lines = f.read().splitlines()
            if len(lines) > LINES_MAX + LINES_TOLERANCE and not any(
                    REASON in line for line in lines[:30]):
                unexplained.append(f"{name} ({len(lines)} lines)")
        self.assertEqual(unexplained, [],
                         f"split these files, or write '{REASON} ...' in their first 30 lines")


if __name__ == "__main__":
    unittest.main()
