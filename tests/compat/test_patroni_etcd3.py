"""Patroni 3.0.2 (Debian's) with its etcd3 DCS and PostgreSQL 15, unmodified,
against a 3-server tenure cluster's etcd gateways (decisions 0048, 0055).

Two Patroni members find every tenure server through MemberList's client
URLs, elect a primary (a leader key on an etcd lease kept alive through the
gateway) and stream a replica. Then the tenure raft leader is killed with
SIGKILL: Patroni's lease renewals and writes go on through the survivors and
the primary stays. Then the primary's Patroni is killed with SIGKILL: once
its lease ends on tenure's leader the replica promotes itself, as against
etcd. Patroni and PostgreSQL run as the `postgres` user (PostgreSQL refuses
root).
"""

import base64
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import unittest

from tenure_testlib import Cluster, free_port, http_request, poll_until

PATRONI = "/usr/bin/patroni"
PG_BIN = "/usr/lib/postgresql/15/bin"
SCOPE = "tenure-ha"


def b64(text):
    return base64.b64encode(text.encode()).decode()


class PatroniEtcd3Test(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(PATRONI), "patroni is installed by scripts/setup")
        self.assertTrue(os.path.exists(f"{PG_BIN}/postgres"), "postgresql-15 by scripts/setup")
        self.postgres = pwd.getpwnam("postgres")
        self.dir = tempfile.mkdtemp(prefix="tenure-patroni-")
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, self.postgres.pw_uid, self.postgres.pw_gid)
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.nodes = {}

    def write_config(self, name, etcd_hosts):
        rest, pg = free_port(), free_port()
        node_dir = os.path.join(self.dir, name)
        os.mkdir(node_dir)
        os.chown(node_dir, self.postgres.pw_uid, self.postgres.pw_gid)
        config = {
            "scope": SCOPE,
            "name": name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{rest}", "connect_address": f"127.0.0.1:{rest}"},
            "etcd3": {"hosts": etcd_hosts},
            "bootstrap": {
                "dcs": {"ttl": 20, "loop_wait": 2, "retry_timeout": 5,
                        "postgresql": {"use_pg_rewind": False}},
                "initdb": [{"encoding": "UTF8"}],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{pg}",
                "connect_address": f"127.0.0.1:{pg}",
                "data_dir": os.path.join(node_dir, "data"),
                "bin_dir": PG_BIN,
                "pgpass": os.path.join(node_dir, "pgpass"),
                "pg_hba": ["local all all trust", "host replication replicator 127.0.0.1/32 trust",
                           "host all all 127.0.0.1/32 trust"],
                "authentication": {"replication": {"username": "replicator", "password": "r"},
                                   "superuser": {"username": "postgres", "password": "p"}},
                "parameters": {"unix_socket_directories": node_dir, "max_connections": 20,
                               "shared_buffers": "16MB"},
            },
        }
        path = os.path.join(node_dir, "patroni.yml")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)  # JSON is YAML
        return {"config": path, "rest": rest, "dir": node_dir,
                "data": config["postgresql"]["data_dir"]}

    def start(self, name, etcd_hosts):
        node = self.write_config(name, etcd_hosts)
        node["log"] = open(os.path.join(self.dir, f"{name}.out"), "w", encoding="utf-8")
        node["process"] = subprocess.Popen([PATRONI, node["config"]], stdout=node["log"],
                                           stderr=subprocess.STDOUT, user="postgres",
                                           group="postgres", cwd=node["dir"])
        self.nodes[name] = node
        self.addCleanup(self.stop, name)
        return node

    def stop(self, name):
        node = self.nodes[name]
        process = node["process"]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.kill_postmaster(node)
        node["log"].close()

    @staticmethod
    def kill_postmaster(node):
        """The PostgreSQL this node's Patroni started, by its pid file (it
        outlives a Patroni killed with SIGKILL)."""
        try:
            with open(os.path.join(node["data"], "postmaster.pid"), encoding="utf-8") as f:
                pid = int(f.readline())
        except (OSError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def role(self, name):
        try:
            resp = http_request(f"127.0.0.1:{self.nodes[name]['rest']}", "GET", "/patroni",
                                timeout=3)
        except OSError:
            return None
        return resp.json().get("role") if resp.status in (200, 503) else None

    def output(self, name):
        with open(os.path.join(self.dir, f"{name}.out"), encoding="utf-8",
                  errors="replace") as f:
            return f.read()[-3000:]

    def leader_key(self, member):
        resp = http_request(member.etcd_addr, "POST", "/v3/kv/range",
                            json.dumps({"key": b64(f"/service/{SCOPE}/leader")}))
        kvs = resp.json().get("kvs", []) if resp.status == 200 else []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def wait_for(self, condition, timeout, what, node):
        def met():
            if self.nodes[node]["process"].poll() is not None:
                raise AssertionError(f"{node}'s Patroni exited")
            return condition()

        try:
            poll_until(met, timeout=timeout, message=what)
        except AssertionError as e:
            raise AssertionError(f"{e}; {node}'s output:\n{self.output(node)}") from None

    def test_a_primary_a_replica_a_killed_tenure_leader_and_a_failover(self):
        cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-grpc-addr", "x"))
        for member in cluster.members:
            member.etcd_addr = f"127.0.0.1:{free_port()}"
            at = member.extra_args.index("-grpc-addr")
            member.extra_args[at + 1] = member.etcd_addr
        with cluster:
            hosts = ",".join(m.etcd_addr for m in cluster.members)
            self.start("pg1", hosts)
            self.wait_for(lambda: self.role("pg1") == "master", 90, "pg1 primary", "pg1")
            self.start("pg2", hosts)
            self.wait_for(lambda: self.role("pg2") == "replica", 90, "pg2 replica", "pg2")
            self.assertEqual(self.leader_key(cluster.members[0]), "pg1")

            # The tenure raft leader dies: Patroni's keepalives and writes go
            # through the survivors, and the primary keeps its place.
            leader = cluster.leader()
            leader.kill()
            survivor = cluster.wait_leader(exclude=leader)
            self.wait_for(lambda: self.role("pg1") == "master" and self.leader_key(survivor) == "pg1",
                          30, "pg1 still primary after the tenure leader died", "pg1")

            # The primary's Patroni dies: its lease ends, pg2 takes over.
            self.nodes["pg1"]["process"].kill()
            self.nodes["pg1"]["process"].wait(timeout=10)
            self.kill_postmaster(self.nodes["pg1"])
            self.wait_for(lambda: self.leader_key(survivor) == "pg2" and self.role("pg2") == "master",
                          90, "pg2 promoted", "pg2")


if __name__ == "__main__":
    unittest.main()
