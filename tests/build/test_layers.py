"""The architecture's arrows, proved against the build (decision 0013).

Each layer is compiled with one include directory, build/layers/<layer>/,
that links only the folders it may use. For every layer this preprocesses,
with that layer's include directory only, a header of each folder ARROWS
below allows (their own includes must resolve there too), and asks the
compiler's include lookup (`__has_include`) that every other folder's header
is not found. So a widened view (a new arrow nobody wrote down here and in
docs/architecture.md) fails this test as surely as a forbidden include
fails the build; and docs/architecture.md's arrow lines and table must say
what ARROWS says.

Run: CXX=c++ TENURE_LAYERS_DIR=build/layers /usr/bin/python3 -m unittest -v test_layers
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# layer target -> the folders its code may include (its own among them).
# docs/architecture.md draws these arrows.
ARROWS = {
    # Every layer sees include/tenure, libtenure's public headers: standard
    # C++ only, and tenure/status.h is the Status of every layer (decision 0016).
    "tenure_common": {"common", "tenure"},
    # acl: the rules language and the Authorizer, pure; state, server, http
    # and agent see it (tokens and policies are replicated state, checks are
    # made where requests are served).
    "tenure_acl": {"common", "acl", "tenure"},
    "tenure_state": {"common", "acl", "state", "tenure"},
    # tls: OpenSSL contexts and sessions; the HTTP client, the HTTPS listener
    # and the raft links use it, and whoever links them sees it.
    "tenure_tls": {"common", "tls", "tenure"},
    # raft links state PUBLIC, which hands on the view of acl: so raft sees it too.
    "tenure_raft": {"common", "acl", "state", "raft", "tls", "tenure"},
    "tenure_server": {"common", "acl", "state", "raft", "server", "tls", "tenure"},
    # etcd: etcd's v3 API (decision 0048), a layer over the server as http is.
    # A follower relays etcd calls to the leader with net's client (0055).
    "tenure_etcd": {"common", "acl", "state", "raft", "server", "etcd", "listen", "net", "tls",
                    "tenure"},
    # zk: ZooKeeper's client protocol (decision 0056), a layer over the
    # server beside http and etcd, its connections on the listener's loop.
    "tenure_zk": {"common", "acl", "state", "raft", "server", "zk", "listen", "tls", "tenure"},
    "tenure_net": {"common", "net", "tls", "tenure"},
    # listen: the listener and its connections (HTTP/1.1, the reader, the
    # per-address table), knowing nothing of the APIs above it: http serves
    # Consul's API through it, etcd's gateway beside it (decision 0048).
    "tenure_listen": {"common", "listen", "tls", "tenure"},
    # http -> net: followers forward with the one HTTP client (decision 0008).
    "tenure_http": {"common", "acl", "state", "raft", "server", "http", "listen", "net", "tls",
                    "tenure"},
    "tenure_agent": {"common", "acl", "state", "raft", "server", "http", "etcd", "zk", "listen",
                     "net", "tls", "agent", "tenure"},
    "tenure_client": {"common", "net", "client", "tls", "tenure"},
    # libtenure's public classes over client (libtenure.so).
    "tenure_sdk": {"common", "net", "client", "tls", "tenure", "sdk"},
    "tenure_cli": {"common", "acl", "state", "raft", "server", "http", "etcd", "zk", "listen",
                   "net", "tls", "agent", "client", "tenure", "cli"},
}


def drawn_arrows(text):
    """layer -> what it may include, by docs/architecture.md's arrow lines
    (`A <- B <- C`: B may include A, C may include B) and their closure."""
    sees = {}
    for line in text.splitlines():
        if not re.fullmatch(r"\s*[a-z/]+( <- [a-z/]+)+\s*", line):
            continue
        chain = [name.split("/")[-1] for name in line.split(" <- ")]
        chain = [name.strip() for name in chain]
        for lower, upper in zip(chain, chain[1:]):
            sees.setdefault(upper, set()).add(lower)
            sees.setdefault(lower, set())

    def reach(layer, seen):
        for lower in sees[layer] - seen:
            seen.add(lower)
            reach(lower, seen)
        return seen

    return {layer: reach(layer, {layer}) for layer in sees}


def tabled_arrows(text):
    """layer -> what it may include, by docs/architecture.md's table."""
    rows = {}
    for line in text.splitlines():
        cells = line.split("|")
        row = re.match(r"\s*`([a-z]+)` \(`tenure_\1`", cells[1]) if len(cells) == 4 else None
        if row:
            rows[row.group(1)] = set(re.findall(r"`([a-z]+)`", cells[2]))
    return rows


def architecture_doc():
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        return f.read()


def folders():
    """folder -> a header in it (src/X or include/X)."""
    out = {}
    for base in ("src", "include"):
        for name in sorted(os.listdir(os.path.join(ROOT, base))):
            path = os.path.join(ROOT, base, name)
            if not os.path.isdir(path):
                continue
            headers = sorted(f for f in os.listdir(path) if f.endswith(".h"))
            if headers:
                out[name] = headers[0]
    return out


class LayerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cxx = os.environ.get("CXX", "c++")
        cls.layers_dir = os.environ.get("TENURE_LAYERS_DIR", os.path.join(ROOT, "build", "layers"))
        cls.folders = folders()
        cls.work = tempfile.mkdtemp(prefix="tenure-layers-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def probe(self, layer):
        """Preprocesses, with the layer's include directory only, one file that
        includes a header of every folder the layer may use (so their own
        includes must resolve in the view too) and asks the compiler's include
        lookup (__has_include) about every other folder's header."""
        lines = []
        for folder, header in self.folders.items():
            include = "%s/%s" % (folder, header)
            if folder in ARROWS[layer]:
                lines.append('#include "%s"' % include)
            else:
                lines.append('#if __has_include("%s")\n#error "visible but forbidden: %s"\n#endif'
                             % (include, include))
        probe = os.path.join(self.work, "%s.cc" % layer)
        with open(probe, "w") as f:
            f.write("\n".join(lines) + "\n")
        return subprocess.run([self.cxx, "-std=c++20", "-E", "-o", os.devnull,
                               "-I", os.path.join(self.layers_dir, layer), probe],
                              capture_output=True, text=True, timeout=120)

    def test_every_folder_of_the_tree_is_placed(self):
        # A new folder must get a row: otherwise nobody decided its arrows.
        placed = set().union(*ARROWS.values())
        self.assertEqual(set(self.folders), placed)

    def test_architecture_doc_draws_these_arrows(self):
        # docs/architecture.md's arrow lines and its table say what ARROWS says.
        text = architecture_doc()
        expected = {layer[len("tenure_"):]: allowed for layer, allowed in ARROWS.items()}
        expected_drawn = dict(expected, tenure={"tenure"})
        self.assertEqual(drawn_arrows(text), expected_drawn)
        self.assertEqual(tabled_arrows(text), expected)
        # The check can fail: one arrow less, or one folder less in a row.
        self.assertNotEqual(drawn_arrows(text.replace(" <- sdk", "")), expected_drawn)
        self.assertNotEqual(drawn_arrows(text.replace("tls <- raft", "tls")), expected_drawn)
        row = "| `common`, `net`, `tls`, `tenure` |"
        self.assertIn(row, text)
        self.assertNotEqual(tabled_arrows(text.replace(row, "| `common`, `net`, `tenure` |")),
                            expected)

    def test_views_match_the_arrows(self):
        for layer, allowed in ARROWS.items():
            view = os.path.join(self.layers_dir, layer)
            self.assertTrue(os.path.isdir(view), view)
            self.assertEqual(set(os.listdir(view)), allowed, layer)

    def test_public_headers_need_nothing_but_themselves(self):
        # include/tenure is below every layer: it may include only itself
        # (tests/sdk/test_install.py also compiles each one from the installed tree).
        folder = os.path.join(ROOT, "include", "tenure")
        for header in sorted(f for f in os.listdir(folder) if f.endswith(".h")):
            with self.subTest(header=header):
                probe = os.path.join(self.work, "public.cc")
                with open(probe, "w") as f:
                    f.write('#include "tenure/%s"\n' % header)
                proc = subprocess.run([self.cxx, "-std=c++17", "-fsyntax-only", "-I",
                                       os.path.join(ROOT, "include"), probe],
                                      capture_output=True, text=True, timeout=120)
                self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])

    def test_each_layer_includes_exactly_what_its_arrows_allow(self):
        # One preprocessor run per layer (a run per include took a minute).
        for layer in ARROWS:
            with self.subTest(layer=layer):
                proc = self.probe(layer)
                self.assertEqual(proc.returncode, 0, "%s: %s" % (layer, proc.stderr[-2000:]))

    def test_the_probe_sees_a_forbidden_folder_and_a_missing_header(self):
        # The check above can fail: a layer's view widened by one folder is
        # reported, and so is an allowed header whose includes do not resolve.
        saved = ARROWS["tenure_common"]
        try:
            ARROWS["tenure_common"] = saved - {"common"}
            proc = self.probe("tenure_common")
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("visible but forbidden: common/", proc.stderr)
            ARROWS["tenure_common"] = saved | {"state"}
            proc = self.probe("tenure_common")
            self.assertNotEqual(proc.returncode, 0)
            # gcc and clang (the sanitized build) say it differently.
            self.assertTrue("No such file or directory" in proc.stderr
                            or "file not found" in proc.stderr, proc.stderr)
        finally:
            ARROWS["tenure_common"] = saved

if __name__ == "__main__":
    unittest.main()


class OneIncluderTest(unittest.TestCase):
    """C libraries kept behind one file of ours, so their types and macros
    reach nothing else (decision 0053 for nghttp2)."""

    ONE_INCLUDER = {"nghttp2/nghttp2.h": "src/listen/http2_session.cc"}

    def test_each_library_header_is_included_by_one_source_file(self):
        for header, owner in self.ONE_INCLUDER.items():
            includers = []
            for folder, _, files in os.walk(os.path.join(ROOT, "src")):
                for name in files:
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8", errors="replace") as source:
                        if re.search(r'#include\s+[<"]' + re.escape(header) + r'[>"]', source.read()):
                            includers.append(os.path.relpath(path, ROOT))
            self.assertEqual(includers, [owner], header)
