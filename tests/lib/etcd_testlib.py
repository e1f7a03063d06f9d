"""A test case class for the etcd client suites: one `tenure server -dev`
with its etcd port on a free address for the whole class (`endpoint`), and
long-running client processes (ProcessLines) that end with each test."""

import unittest

from process_lines import ProcessLines
from tenure_testlib import DevServer, free_port


class EtcdDevServerCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.endpoint = f"127.0.0.1:{free_port()}"
        cls.etcd_addr = cls.endpoint  # the name the HTTP-level suites use
        cls.server = DevServer(extra_args=["-grpc-addr", cls.endpoint]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        self.background = []

    def tearDown(self):
        for process in self.background:
            process.stop()
        # A server that died takes every later test of the class with it;
        # say why once, at the test that saw it go.
        if not self.server.alive() and not getattr(type(self), "_death_reported", False):
            type(self)._death_reported = True
            self.fail(f"the server exited ({self.server.process.returncode}):\n"
                      + self.server.log_tail(150))

    def start_lines(self, argv, env=None):
        """Starts `argv`; its output lines are polled by the test, and it is
        killed when the test ends."""
        process = ProcessLines(argv, env=env)
        self.background.append(process)
        return process


def held_script(log):
    """The command `etcdctl lock NAME -- sh -c ...` runs under the lock: a
    start and an end line of its own pid around a short sleep, appended to
    `log`."""
    return f'echo "start $$" >> {log}; sleep 0.3; echo "end $$" >> {log}'

