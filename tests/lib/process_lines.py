"""A long-running client process whose output lines a test polls with a
deadline (etcdctl watch and elect, the Go etcd client): a thread reads its
stdout (stderr merged) as it comes."""

import subprocess
import threading


class ProcessLines:
    def __init__(self, argv, env=None):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env=env)
        self.lines = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self.process.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self):
        """Every line so far."""
        with self._lock:
            return list(self.lines)

    def seen(self, prefix):
        """The lines so far that start with `prefix`."""
        return [line for line in self.snapshot() if line.startswith(prefix)]

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self):
        """Kills the process (if still running) and closes its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self._thread.join(timeout=10)
        self.process.stdin.close()
        self.process.stdout.close()
