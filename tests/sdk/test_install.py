"""libtenure stands alone (decision 0016): the SDK as an application gets it.

`cmake --install` of the build under test into a temporary prefix, then,
against that tree only:
  - every public header compiles alone, as C++17 and C++20, with nothing but
    -I<prefix>/include, and includes only standard headers and its siblings;
  - libtenure.so exports tenure's public API and nothing else (no Boost, no
    standard-library instances, no internal layer);
  - tests/sdk/consumer builds with CMake (find_package(tenure CONFIG), only
    CMAKE_PREFIX_PATH=<prefix>) and with `pkg-config --cflags --libs tenure`
    (only PKG_CONFIG_PATH=<prefix>/lib/pkgconfig), and each build campaigns on
    a real server (the installed `tenure` binary) and prints the fencing token
    the server reports as the key's Fence.

Run by ctest (sdk.test_install), which sets TENURE_BUILD_DIR, CMAKE_COMMAND,
CMAKE_GENERATOR, CXX and PKG_CONFIG.
"""

import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

from tenure_testlib import DevServer, poll_until, quote_key

HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer")

# The C++17 standard library headers a public header may include.
STD_HEADERS = {
    "algorithm", "any", "array", "atomic", "chrono", "cstddef", "cstdint", "cstdlib", "cstring",
    "functional", "future", "initializer_list", "iosfwd", "limits", "map", "memory", "mutex",
    "optional", "set", "string", "string_view", "system_error", "tuple", "type_traits",
    "unordered_map", "utility", "variant", "vector",
}


def run(argv, env=None, timeout=600, cwd=None):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(argv), proc.returncode,
                                                       proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc


class LineReader:
    """The stdout lines of a process, read on a thread, with a deadline."""

    def __init__(self, stream):
        self.lines = queue.Queue()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next(self, timeout=20.0):
        """The next line; AssertionError at EOF or after the timeout."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no output line within %.1fs" % timeout) from None
        if line is None:
            raise AssertionError("the consumer exited")
        return line

    def nothing_for(self, seconds):
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError("unexpected output: %r" % line)


class InstalledSdkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="tenure-sdk-")
        cls.prefix = os.path.join(cls.work, "prefix")
        cls.cxx = os.environ.get("CXX", "c++")
        run([os.environ.get("CMAKE_COMMAND", "cmake"), "--install",
             os.environ["TENURE_BUILD_DIR"], "--prefix", cls.prefix])
        cls.include = os.path.join(cls.prefix, "include")
        cls.libdir = os.path.dirname(cls.find_one("libtenure.so"))
        cls.server = DevServer(binary=os.path.join(cls.prefix, "bin", "tenure")).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def find_one(cls, name):
        found = [os.path.join(d, name) for d, _, files in os.walk(cls.prefix) if name in files]
        if len(found) != 1:
            raise AssertionError("%s in the installed tree: %r" % (name, found))
        return found[0]

    def public_headers(self):
        folder = os.path.join(self.include, "tenure")
        headers = sorted(f for f in os.listdir(folder) if f.endswith(".h"))
        self.assertIn("tenure.h", headers)
        return headers

    # ---- the installed tree ------------------------------------------------

    def test_the_tree_holds_the_binary_library_headers_and_package_files(self):
        self.assertTrue(os.access(os.path.join(self.prefix, "bin", "tenure"), os.X_OK))
        for name in ("tenureConfig.cmake", "tenureConfigVersion.cmake", "tenureTargets.cmake",
                     "tenure.pc"):
            self.find_one(name)
        soname = run(["readelf", "-d", os.path.join(self.libdir, "libtenure.so")]).stdout
        self.assertRegex(soname, r"Library soname: \[libtenure\.so\.\d+(\.\d+)?\]")
        # Nothing private went in: internal headers, static layers.
        for _, _, files in os.walk(self.prefix):
            for f in files:
                self.assertFalse(f.endswith(".a"), f)
        self.assertEqual(os.listdir(self.include), ["tenure"])

    def test_each_public_header_compiles_alone_with_the_standard_library(self):
        probe = os.path.join(self.work, "probe.cc")
        for header in self.public_headers():
            with self.subTest(header=header):
                with open(os.path.join(self.include, "tenure", header)) as f:
                    text = f.read()
                for kind, name in re.findall(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', text, re.M):
                    if kind == "<":
                        self.assertIn(name, STD_HEADERS, "%s includes <%s>" % (header, name))
                    else:
                        self.assertTrue(name.startswith("tenure/"), "%s includes %s"
                                        % (header, name))
                with open(probe, "w") as f:
                    f.write("#include <tenure/%s>\n" % header)
                for std in ("c++17", "c++20"):
                    run([self.cxx, "-std=" + std, "-fsyntax-only", "-Wall", "-Wextra",
                         "-Wpedantic", "-Werror", "-I", self.include, probe])

    def test_the_library_exports_the_public_api_only(self):
        out = run(["nm", "-D", "--defined-only", "-C",
                   os.path.join(self.libdir, "libtenure.so")]).stdout
        symbols = [line.split(" ", 2)[2] for line in out.splitlines() if line.count(" ") >= 2]
        self.assertTrue(any(s.startswith("tenure::Election::Campaign(") for s in symbols))
        for symbol in symbols:
            self.assertTrue(symbol.startswith("tenure::"), symbol)
            self.assertNotRegex(symbol, r"^tenure::(client|net|sdk|cli)::", symbol)

    # ---- consumers -----------------------------------------------------------

    def test_a_cmake_consumer_campaigns_and_prints_the_servers_fencing_token(self):
        build = os.path.join(self.work, "consumer-cmake")
        configure = [os.environ.get("CMAKE_COMMAND", "cmake"), "-S", CONSUMER, "-B", build,
                     "-DCMAKE_PREFIX_PATH=" + self.prefix, "-DCMAKE_CXX_COMPILER=" + self.cxx,
                     "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
                     "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"]
        if os.environ.get("CMAKE_GENERATOR"):
            configure += ["-G", os.environ["CMAKE_GENERATOR"]]
        env = {k: v for k, v in os.environ.items() if not k.startswith("CMAKE_PREFIX")}
        out = run(configure, env=env).stdout
        self.assertIn("tenure 0.", out)
        self.assertIn("from " + self.prefix, out)  # not a tenure found elsewhere
        run([os.environ.get("CMAKE_COMMAND", "cmake"), "--build", build], env=env)
        binary = os.path.join(build, "consumer")
        self.check_links_the_installed_library(binary)
        self.campaign_behind_a_holder(binary, "sdk-cmake")

    def test_a_pkg_config_consumer_campaigns_and_prints_the_servers_fencing_token(self):
        env = dict(os.environ)
        pcdir = os.path.dirname(self.find_one("tenure.pc"))
        env["PKG_CONFIG_PATH"] = pcdir
        env["PKG_CONFIG_LIBDIR"] = pcdir  # and no system directory
        pkg_config = os.environ.get("PKG_CONFIG") or "pkg-config"
        flags = run([pkg_config, "--cflags", "--libs", "tenure"], env=env).stdout.split()
        libdir = run([pkg_config, "--variable=libdir", "tenure"], env=env).stdout.strip()
        self.assertEqual(os.path.realpath(libdir), os.path.realpath(self.libdir))
        binary = os.path.join(self.work, "consumer-pkg-config")
        run([self.cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror",
             os.path.join(CONSUMER, "main.cc"), "-o", binary, "-Wl,-rpath," + libdir] + flags)
        self.check_links_the_installed_library(binary)
        self.campaign_free_key(binary, "sdk-pkg-config")

    def check_links_the_installed_library(self, binary):
        lines = [line for line in run(["ldd", binary]).stdout.splitlines()
                 if "libtenure.so" in line]
        self.assertEqual(len(lines), 1, lines)
        path = lines[0].split("=>")[1].split("(")[0].strip()
        self.assertTrue(os.path.realpath(path).startswith(os.path.realpath(self.prefix) + "/"),
                        lines[0])

    # ---- what the consumer does against the server -----------------------

    def start_consumer(self, binary, election, candidate):
        proc = subprocess.Popen([binary, self.server.http_addr, election, candidate],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, proc)
        out = LineReader(proc.stdout)
        self.assertRegex(out.next(), r"^libtenure 0\.\d+\.\d+$")
        session = out.next()
        self.assertRegex(session, r"^session [0-9a-f-]{36}$")
        return proc, out, session.split()[1]

    @staticmethod
    def reap(proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()

    def check_token(self, out, key, session):
        line = out.next()
        match = re.fullmatch(r"leader (\S+) fencing-token (\d+)", line)
        self.assertTrue(match, line)
        self.assertEqual(match.group(1), key)
        token = int(match.group(2))
        entry = self.server.kv_entry(key)
        self.assertEqual(entry["Session"], session)
        self.assertEqual(entry["Fence"], token)
        self.assertGreater(token, 0)
        return token

    def resign(self, proc, out, key):
        proc.stdin.write("\n")
        proc.stdin.flush()
        self.assertEqual(out.next(), "resigned")
        self.assertEqual(proc.wait(timeout=20), 0, proc.stderr.read())
        self.assertNotIn("Session", self.server.kv_entry(key) or {})

    def campaign_free_key(self, binary, election):
        key = "service/%s/leader" % election
        proc, out, session = self.start_consumer(binary, election, "solo")
        self.check_token(out, key, session)
        self.resign(proc, out, key)

    def campaign_behind_a_holder(self, binary, election):
        # Another session holds the key: the campaign blocks until it lets go,
        # and then gets a newer token than the holder's.
        key = "service/%s/leader" % election
        holder = self.server.create_session({"Name": "holder", "LockDelay": "0s"})
        resp = self.server.request("PUT", "/v1/kv/%s?acquire=%s" % (quote_key(key), holder),
                                   b"holder")
        self.assertEqual(resp.json(), True)
        held_token = int(resp.header("X-Tenure-Fence"))
        proc, out, session = self.start_consumer(binary, election, "waiter")
        poll_until(lambda: self.server.kv_entry("service/%s/candidates/waiter" % election),
                   message="the consumer registered as a candidate")
        out.nothing_for(1.0)
        resp = self.server.request("PUT", "/v1/kv/%s?release=%s" % (quote_key(key), holder))
        self.assertEqual(resp.json(), True)
        token = self.check_token(out, key, session)
        self.assertGreater(token, held_token)
        self.resign(proc, out, key)


if __name__ == "__main__":
    unittest.main()
