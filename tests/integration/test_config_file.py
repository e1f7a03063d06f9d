"""`tenure server -config-file/-config-dir` and `tenure validate` (docs/config.md),
with the real binary: a server started from a file serves where the file says,
a flag wins over the file, a bad file starts nothing, and validate agrees.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_config_file
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from tenure_testlib import DevServer, free_port, poll_until, tenure_bin


class FileServer(DevServer):
    """A server whose settings come from config_args (-config-file ...) and
    extra_args only: its addresses are in the files."""

    def __init__(self, config_args, http_addr, raft_addr, extra_args=()):
        super().__init__(extra_args=extra_args, dev=False, http_addr=http_addr,
                         raft_addr=raft_addr)
        self.config_args = list(config_args)

    def argv(self):
        return [self.binary, "server", *self.config_args, *self.extra_args]


def run(*argv):
    return subprocess.run([tenure_bin(), *argv], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def listening(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


class ConfigFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-config-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.http_addr = f"127.0.0.1:{free_port()}"
        self.raft_addr = f"127.0.0.1:{free_port()}"
        self.data_dir = os.path.join(self.dir, "data")

    def write(self, name, settings_or_text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            if isinstance(settings_or_text, str):
                f.write(settings_or_text)
            else:
                json.dump(settings_or_text, f, indent=2)
        return path

    def base_settings(self):
        return {"data_dir": self.data_dir, "http_addr": self.http_addr,
                "raft_addr": self.raft_addr, "node_name": "from-file",
                "datacenter": "dc-file", "session_ttl_multiplier": 1,
                "acl": {"enable_key_list_policy": False}}

    def test_a_server_serves_as_its_file_says(self):
        path = self.write("server.json", self.base_settings())
        with FileServer(["-config-file", path], self.http_addr, self.raft_addr) as server:
            config = server.get_json("/v1/agent/self")["Config"]
            self.assertEqual(config["NodeName"], "from-file")
            self.assertEqual(config["Datacenter"], "dc-file")
            self.assertEqual(server.get_json("/v1/status/leader"), self.raft_addr)
            self.assertTrue(os.path.isdir(self.data_dir))
            self.assertEqual(run("validate", path).stdout, "Configuration is valid!\n")

    def test_a_flag_wins_over_the_file_and_later_files_over_earlier(self):
        base = self.write("base.json", self.base_settings())
        self.write("conf.d/20-name.hcl", 'node_name = "from-dir"  # HCL, as Consul reads\n')
        self.write("conf.d/10-name.json", {"node_name": "overridden", "datacenter": "dc-dir"})
        flag_addr = f"127.0.0.1:{free_port()}"
        server = FileServer(["-config-file", base, "-config-dir", os.path.join(self.dir, "conf.d")],
                            flag_addr, self.raft_addr, extra_args=["-http-addr", flag_addr])
        with server:
            config = server.get_json("/v1/agent/self")["Config"]
            self.assertEqual(config["NodeName"], "from-dir")
            self.assertEqual(config["Datacenter"], "dc-dir")
            self.assertFalse(listening(self.http_addr), "the file's http_addr is not used")

    def test_a_bad_file_starts_nothing(self):
        settings = self.base_settings()
        text = json.dumps(settings, indent=2).replace('"http_addr"', '"htp_addr"')
        path = self.write("bad.json", text)
        line = next(i for i, l in enumerate(text.splitlines(), 1) if "htp_addr" in l)
        proc = run("server", "-config-file", path)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(proc.stderr, f'tenure server: {path}:{line}: unknown key "htp_addr" '
                                      '(did you mean "http_addr"?)\n')
        self.assertEqual(proc.stdout, "")
        self.assertFalse(os.path.exists(self.data_dir), "no data dir made")
        # The same from validate, and for a directory given as a file.
        bad = run("validate", path)
        self.assertEqual((bad.returncode, bad.stdout), (1, ""))
        self.assertIn(f"{path}:{line}: unknown key", bad.stderr)
        proc = run("server", "-config-file", self.dir)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr,
                         f"tenure server: {self.dir}: is a directory (give it with -config-dir)\n")

    def test_a_bad_setting_names_its_file(self):
        settings = self.base_settings()
        settings["raft_heartbeat"] = "1h"
        path = self.write("slow.json", settings)
        proc = run("server", "-config-file", path)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("-raft-heartbeat must be a duration", proc.stderr)
        self.assertIn(f"(-raft-heartbeat set by raft_heartbeat at {path}:", proc.stderr)
        self.assertFalse(os.path.exists(self.data_dir))
        bad = run("validate", path)
        self.assertEqual(bad.returncode, 1)
        self.assertEqual(bad.stderr, proc.stderr.replace("tenure server:", "tenure validate:"))

    def test_validate(self):
        good = self.write("good.json", self.base_settings())
        ok = run("validate", good)
        self.assertEqual((ok.returncode, ok.stdout, ok.stderr),
                         (0, "Configuration is valid!\n", ""))
        hcl = self.write("good.hcl", f'data_dir = "{self.data_dir}"\nacl {{ enabled = true }}\n')
        self.assertEqual(run("validate", hcl).stdout, "Configuration is valid!\n")
        bad_hcl = run("validate", self.write("bad.hcl", "acl {\n  enabled = yes\n}\n"))
        self.assertEqual(bad_hcl.stderr, "tenure validate: " + os.path.join(self.dir, "bad.hcl")
                         + ":2: unexpected yes: expected a value\n")
        quiet = run("validate", "-quiet", good)
        self.assertEqual((quiet.returncode, quiet.stdout, quiet.stderr), (0, "", ""))
        # Together with a directory whose file breaks the combination.
        self.write("d/x.json", {"join": ["127.0.0.1:1"], "bootstrap_peers": "1@" + self.raft_addr})
        both = run("validate", good, os.path.join(self.dir, "d"))
        self.assertEqual(both.returncode, 1)
        self.assertTrue(both.stderr.startswith(
            "tenure validate: -join and -bootstrap-peers exclude each other"), both.stderr)
        # Without data_dir, as the server itself would refuse.
        alone = run("validate", self.write("alone.json", {"node_name": "n"}))
        self.assertEqual(alone.returncode, 1)
        self.assertEqual(alone.stderr,
                         "tenure validate: -data-dir is required (or use -dev)\n")
        none = run("validate")
        self.assertEqual(none.returncode, 1)
        self.assertIn("give at least one config file or directory", none.stderr)
        missing = run("validate", os.path.join(self.dir, "missing.json"))
        self.assertEqual(missing.stderr, "tenure validate: "
                         + os.path.join(self.dir, "missing.json") + ": No such file or directory\n")

    def test_a_keyless_server_with_peers_needs_a_key_tls_or_to_say_so(self):
        # Without a key or mutual TLS, anyone who reaches the raft port can
        # pose as a member (docs/security.md): outside -dev a server with
        # peers refuses to start, and validate says so, naming the file.
        other = f"127.0.0.1:{free_port()}"
        settings = dict(self.base_settings(), bootstrap_peers=f"1@{self.raft_addr},2@{other}")
        path = self.write("peers.json", settings)
        for argv in (("server", "-config-file", path), ("validate", path)):
            proc = run(*argv)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn(": -raft-key-file (or mutual TLS: -tls-cert-file, -tls-key-file and "
                          "-tls-ca-file) is required for a server with peers (-bootstrap-peers)",
                          proc.stderr)
            self.assertIn("accept the risk with -raft-insecure-keyless", proc.stderr)
            self.assertIn(f"-bootstrap-peers set by bootstrap_peers at {path}:", proc.stderr)
        self.assertFalse(os.path.exists(self.data_dir), "no data dir made")
        # Said in the file, it is a choice.
        insecure = self.write("insecure.json", dict(settings, raft_insecure_keyless=True))
        self.assertEqual(run("validate", insecure).stdout, "Configuration is valid!\n")
        # And as a flag: the server starts (its peer never comes, so it has no
        # leader) and says what it risks.
        server = FileServer(["-config-file", path], self.http_addr, self.raft_addr,
                            extra_args=["-raft-insecure-keyless"])
        self.addCleanup(server.close)
        server._spawn()
        poll_until(lambda: "WARNING: -raft-insecure-keyless: no cluster key or mutual TLS"
                   in server.log() or server.process.poll() is not None, timeout=15,
                   message="the server neither started nor exited")
        self.assertIsNone(server.process.poll(), server.log())
        self.assertIn("can pose as a member, join this cluster", server.log())

    def test_a_nul_byte_and_two_listeners_on_one_port_are_refused(self):
        # A NUL byte (only a file can hold one) cuts a path short where the
        # system reads it; the server started with it exited 1.
        settings = self.base_settings()
        settings["data_dir"] = self.data_dir + "\u0000x"
        path = self.write("nul.json", settings)
        line = next(i for i, l in enumerate(open(path).read().splitlines(), 1) if "data_dir" in l)
        bad = run("validate", path)
        self.assertEqual((bad.returncode, bad.stdout), (1, ""))
        self.assertEqual(bad.stderr, "tenure validate: -data-dir: contains a NUL byte (at byte "
                         f"{len(self.data_dir)}), which no path, address or name may hold "
                         f"(-data-dir set by data_dir at {path}:{line})\n")
        proc = run("server", "-config-file", path)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr, bad.stderr.replace("tenure validate:", "tenure server:"))
        self.assertFalse(os.path.exists(self.data_dir), "no data dir made")
        # http_addr on raft_addr: from a file and from flags alike.
        settings = self.base_settings()
        settings["http_addr"] = self.raft_addr
        path = self.write("same.json", settings)
        bad = run("validate", path)
        self.assertEqual(bad.returncode, 1)
        lines = open(path).read().splitlines()
        raft_line = next(i for i, l in enumerate(lines, 1) if "raft_addr" in l)
        http_line = next(i for i, l in enumerate(lines, 1) if "http_addr" in l)
        self.assertEqual(
            bad.stderr,
            f"tenure validate: -raft-addr {self.raft_addr} and -http-addr {self.raft_addr} would "
            f"both listen on port {self.raft_addr.rsplit(':', 1)[1]} of the same address; give "
            f"each its own port (-raft-addr set by raft_addr at {path}:{raft_line}; -http-addr "
            f"set by http_addr at {path}:{http_line})\n")
        proc = run("server", "-data-dir", self.data_dir, "-http-addr", self.raft_addr,
                   "-raft-addr", self.raft_addr)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(f"-raft-addr {self.raft_addr} and -http-addr {self.raft_addr} would both "
                      "listen on port", proc.stderr)
        self.assertFalse(os.path.exists(self.data_dir), "no data dir made")


if __name__ == "__main__":
    unittest.main()
