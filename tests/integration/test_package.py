"""scripts/package (docs/packaging.md): the .deb it builds from the build dir
ctest was configured with, its files and conffiles, an install into a
throwaway root (dpkg --root with its own dpkg database and /etc/passwd) and
a purge, the unit through systemd-analyze verify, the default config through
`tenure validate`, and the packaged binary telling a NOTIFY_SOCKET READY=1
once its HTTP port answers and STOPPING=1 on SIGTERM.

Run (from tests/integration):
  TENURE_BIN=<build>/src/tenure TENURE_BUILD_DIR=<build> PYTHONPATH=<repo>/tests/lib \\
    /usr/bin/python3 -m unittest -v test_package
"""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from tenure_testlib import free_port, http_request, tenure_bin

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def build_dir():
    return os.environ.get("TENURE_BUILD_DIR") or os.path.dirname(os.path.dirname(tenure_bin()))


def run(*argv, **kwargs):
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, **kwargs)
    if proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenure-package-test-")
        out = run(os.path.join(REPO, "scripts", "package"), "-build-dir", build_dir(), "-out",
                  cls.dir)
        cls.deb = out.strip().splitlines()[-1]
        cls.version = run(tenure_bin(), "version").split()[-1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def tmp(self, name):
        path = tempfile.mkdtemp(prefix=name + "-", dir=self.dir)
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def test_files_and_control(self):
        self.assertTrue(os.path.basename(self.deb).startswith(f"tenure_{self.version}_"))
        entries = {}
        for line in run("dpkg-deb", "-c", self.deb).splitlines():
            fields = line.split()
            path = fields[5].lstrip(".")
            entries[path] = (fields[0], fields[1])
        expected = {
            "/usr/bin/tenure": "-rwxr-xr-x",
            "/lib/systemd/system/tenure.service": "-rw-r--r--",
            "/etc/tenure/tenure.json": "-rw-r--r--",
            "/usr/share/man/man1/tenure.1.gz": "-rw-r--r--",
            "/usr/include/tenure/tenure.h": "-rw-r--r--",
            "/usr/include/tenure/client.h": "-rw-r--r--",
        }
        for path, mode in expected.items():
            self.assertIn(path, entries)
            self.assertEqual(entries[path], (mode, "root/root"), path)
        for suffix in ("/pkgconfig/tenure.pc", "/cmake/tenure/tenureConfig.cmake"):
            self.assertTrue(any(p.endswith(suffix) for p in entries), suffix)
        self.assertTrue(any("/libtenure.so." in p for p in entries))
        self.assertTrue(all(owner == "root/root" for _, owner in entries.values()))

        info = run("dpkg-deb", "-I", self.deb)
        self.assertIn(" conffiles", info)
        self.assertEqual(run("dpkg-deb", "-I", self.deb, "conffiles").split(),
                         ["/etc/tenure/tenure.json"])
        control = run("dpkg-deb", "-f", self.deb, "Package", "Version", "Depends")
        self.assertIn("Package: tenure\n", control)
        self.assertIn(f"Version: {self.version}\n", control)
        depends = control.split("Depends:", 1)[1]
        for package in ("adduser", "libc6", "libsystemd0", "libraft2", "libuv1", "libssl3"):
            self.assertIn(package, depends)

        # Stripped: no symbol table left in the binary.
        extracted = self.tmp("extract")
        run("dpkg-deb", "-x", self.deb, extracted)
        symbols = subprocess.run(["nm", os.path.join(extracted, "usr/bin/tenure")],
                                 capture_output=True, text=True)
        self.assertIn("no symbols", symbols.stderr)
        # The man page covers every command.
        page = subprocess.run(["zcat", os.path.join(extracted, "usr/share/man/man1/tenure.1.gz")],
                              capture_output=True, text=True, check=True).stdout
        for command in ("server", "kv", "session", "validate", "keygen"):
            self.assertIn(f".SS {command}", page)

    def test_install_into_a_throwaway_root_and_purge(self):
        root = self.tmp("root")
        for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"):
            os.makedirs(os.path.join(root, d))
        for name, text in (("var/lib/dpkg/status", ""), ("var/lib/dpkg/available", ""),
                           ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("etc/group", "root:x:0:\n"),
                           ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
                           ("etc/gshadow", "root:*::\n")):
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        dpkg = ["dpkg", f"--root={root}", "--log=/dev/null", "--force-script-chrootless",
                "--force-depends", "--force-not-root"]
        run(*dpkg, "-i", self.deb)
        run(*dpkg, "-i", self.deb)  # again: postinst is idempotent

        self.assertIn("/etc/tenure/tenure.json",
                      run("dpkg-query", f"--admindir={root}/var/lib/dpkg", "-L", "tenure"))
        with open(os.path.join(root, "etc/passwd"), encoding="utf-8") as f:
            users = [line.split(":") for line in f]
        tenure = [u for u in users if u[0] == "tenure"]
        self.assertEqual(len(tenure), 1)
        uid = int(tenure[0][2])
        self.assertLess(uid, 1000)  # a system user
        self.assertEqual(tenure[0][5], "/var/lib/tenure")
        data = os.stat(os.path.join(root, "var/lib/tenure"))
        self.assertEqual(stat.S_IMODE(data.st_mode), 0o750)
        self.assertEqual(data.st_uid, uid)
        binary = os.path.join(root, "usr/bin/tenure")
        self.assertEqual(stat.S_IMODE(os.stat(binary).st_mode), 0o755)

        # The default config is valid and says what the package promises.
        config = os.path.join(root, "etc/tenure/tenure.json")
        self.assertIn("Configuration is valid!", run(binary, "validate", config))
        with open(config, encoding="utf-8") as f:
            settings = json.load(f)
        self.assertEqual(settings["data_dir"], "/var/lib/tenure")
        self.assertEqual(settings["http_addr"], "127.0.0.1:8500")
        self.assertEqual(settings["raft_addr"], "127.0.0.1:8300")
        self.assertTrue(settings["acl"]["enabled"])

        # The unit: systemd-analyze finds nothing to say about it, with
        # ExecStart's binary where the package put it. The root gets what
        # the unit needs of a system: ExecReload's /bin/kill and the targets.
        unit = os.path.join(root, "lib/systemd/system/tenure.service")
        with open(unit, encoding="utf-8") as f:
            text = f.read()
        for line in ("Type=notify", "User=tenure", "ExecStart=/usr/bin/tenure server -config-dir "
                     "/etc/tenure", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure",
                     "NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=\n",
                     "StateDirectory=tenure", "ReadWritePaths=/var/lib/tenure"):
            self.assertIn(line, text)
        os.makedirs(os.path.join(root, "bin"), exist_ok=True)
        shutil.copy("/bin/kill", os.path.join(root, "bin/kill"))
        for name in os.listdir("/lib/systemd/system"):
            if name.endswith(".target"):
                shutil.copy(os.path.join("/lib/systemd/system", name),
                            os.path.join(root, "lib/systemd/system", name), follow_symlinks=False)
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={root}",
                                 "/lib/systemd/system/tenure.service"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertNotIn("tenure.service", verify.stderr)

        run(*dpkg, "--purge", "tenure")
        self.assertFalse(os.path.exists(binary))
        self.assertFalse(os.path.exists(config))
        self.assertFalse(os.path.exists(unit))
        self.assertFalse(os.path.exists(os.path.join(root, "usr/share/man/man1/tenure.1.gz")))
        self.assertTrue(os.path.isdir(os.path.join(root, "var/lib/tenure")))  # data stays

    def test_notifies_ready_and_stopping(self):
        extracted = self.tmp("notify")
        run("dpkg-deb", "-x", self.deb, extracted)
        with open(os.path.join(extracted, "etc/tenure/tenure.json"), encoding="utf-8") as f:
            settings = json.load(f)
        http_addr = f"127.0.0.1:{free_port()}"
        settings.update(data_dir=os.path.join(extracted, "data"), http_addr=http_addr,
                        raft_addr=f"127.0.0.1:{free_port()}")
        config_dir = os.path.join(extracted, "config")
        os.makedirs(config_dir)
        with open(os.path.join(config_dir, "tenure.json"), "w", encoding="utf-8") as f:
            json.dump(settings, f)

        notify_path = os.path.join(extracted, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind(notify_path)
        log = open(os.path.join(extracted, "server.log"), "w+", encoding="utf-8")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [os.path.join(extracted, "usr/bin/tenure"), "server", "-config-dir", config_dir],
            env={**os.environ, "NOTIFY_SOCKET": notify_path}, stdout=log, stderr=log,
            stdin=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())

        def receive(deadline):
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                return sock.recv(4096).decode()
            except socket.timeout:
                log.seek(0)
                self.fail(f"no notification in time; server log:\n{log.read()}")

        message = receive(time.monotonic() + 30)
        self.assertIn("READY=1", message.split("\n"))
        # Ready means serving: the HTTP port answers now, without waiting.
        response = http_request(http_addr, "GET", "/v1/status/leader", timeout=5)
        self.assertIn(response.status, (200, 403))

        proc.send_signal(signal.SIGTERM)
        message = receive(time.monotonic() + 30)
        self.assertIn("STOPPING=1", message.split("\n"))
        self.assertEqual(proc.wait(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
