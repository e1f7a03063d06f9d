"""Health endpoints on real servers (docs/operations.md).

A 3-server cluster: autopilot health (asked of a follower, answered by the
leader) is 200 and Healthy with every member up; killing a follower turns
it to 429 with that server Healthy false and no failure tolerance left,
and restarting it brings 200 back. Killing the leader makes the surviving
followers' readiness say "no leader" until a new one is elected. A single
server with ACLs on (default deny): autopilot health without a token is
Consul's 403; the probes need none.
"""

import unittest

from tenure_testlib import Cluster, DevServer, poll_until

MANAGEMENT = "5e1ec7ed-0000-4000-8000-00000000beef"


def autopilot(member, headers=None):
    resp = member.request("GET", "/v1/operator/autopilot/health", headers=headers, timeout=5.0)
    return resp.status, (resp.json() if resp.status in (200, 429) else resp.text)


def by_name(body):
    return {s["Name"]: s for s in body["Servers"]}


class ClusterHealthTest(unittest.TestCase):
    def test_autopilot_health_and_readiness_follow_the_members(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]

            def healthy():
                status, body = autopilot(followers[0])
                # Names come from the member records, written once elected.
                named = status == 200 and all(s["Name"] for s in body["Servers"])
                return body if named and body["Healthy"] else None
            body = poll_until(healthy, timeout=20, message="autopilot health never turned 200")
            self.assertEqual(body["FailureTolerance"], 1)
            servers = by_name(body)
            self.assertEqual(set(servers), {"node1", "node2", "node3"})
            self.assertEqual(sum(s["Leader"] for s in servers.values()), 1)
            for name, server in servers.items():
                self.assertTrue(server["Voter"])
                self.assertEqual(server["SerfStatus"], "alive")
                self.assertEqual(server["ID"], name[len("node"):])
                for field in ("Address", "Version", "LastContact", "LastTerm", "LastIndex",
                              "StableSince"):
                    self.assertIn(field, server)
            for member in cluster.members:
                resp = member.request("GET", "/v1/agent/health/live")
                self.assertEqual((resp.status, resp.text), (200, "ok\n"))
                poll_until(lambda m=member: m.request("GET", "/v1/agent/health/ready").status
                           == 200, timeout=10, message="a member never turned ready")

            # A follower dies: the leader stops hearing from it.
            victim = followers[1]
            victim_name = f"node{cluster.id_of(victim)}"
            victim.kill()

            def unhealthy():
                status, body = autopilot(followers[0])
                if status != 429:
                    return None
                servers = by_name(body)
                if servers[victim_name]["SerfStatus"] != "failed":
                    return None
                return body
            body = poll_until(unhealthy, timeout=10, interval=0.02,
                              message="autopilot health never turned 429")
            self.assertFalse(body["Healthy"])
            self.assertEqual(body["FailureTolerance"], 0)
            for name, server in by_name(body).items():
                self.assertEqual(server["Healthy"], name != victim_name, server)
            # The survivors still serve: a quorum is left.
            poll_until(lambda: followers[0].request("GET", "/v1/agent/health/ready").status
                       == 200, timeout=10, message="a survivor was not ready")

            victim.start()
            poll_until(lambda: autopilot(followers[0])[0] == 200, timeout=20,
                       message="autopilot health never came back to 200")

            # The leader dies: until a new one is elected, the followers'
            # readiness says there is none.
            leader.kill()
            seen = {}

            def no_leader_seen():
                for member in followers:
                    resp = member.request("GET", "/v1/agent/health/ready", timeout=2.0)
                    if resp.status == 503:
                        seen[resp.text] = True
                return "not ready: no leader\n" in seen
            poll_until(no_leader_seen, timeout=15, interval=0.005,
                       message="no follower ever said it had no leader")
            self.assertEqual(set(seen), {"not ready: no leader\n"})
            new_leader = cluster.wait_leader(exclude=leader)
            for member in followers:
                poll_until(lambda m=member: m.request("GET", "/v1/agent/health/ready").status
                           == 200, timeout=15, message="a survivor never turned ready again")
            # Two of three voters: healthy ones are a bare quorum, and the
            # dead leader makes the cluster unhealthy.
            status, body = poll_until(
                lambda: (lambda r: r if r[0] == 429 else None)(autopilot(new_leader)),
                timeout=10, message="autopilot health with the old leader dead was not 429")
            self.assertEqual(body["FailureTolerance"], 0)
            self.assertFalse(by_name(body)[f"node{cluster.id_of(leader)}"]["Healthy"])


class AclHealthTest(unittest.TestCase):
    def test_autopilot_health_needs_operator_read_and_probes_need_no_token(self):
        with DevServer(extra_args=["-acl-enabled", "-acl-default-policy", "deny",
                                   "-acl-initial-management", MANAGEMENT]) as server:
            resp = server.request("GET", "/v1/operator/autopilot/health")
            self.assertEqual(resp.status, 403)
            self.assertEqual(resp.text,
                             "Permission denied: anonymous token lacks permission "
                             "'operator:read'. The anonymous token is used implicitly when "
                             "a request does not specify a token.")
            # The initial management token exists once the new leader has
            # committed the ACL setup, a moment after it was elected (Consul
            # answers "ACL not found" in that moment too).
            status, body = poll_until(
                lambda: (lambda r: r if r[1] != "ACL not found" else None)(
                    autopilot(server, headers={"X-Consul-Token": MANAGEMENT})),
                timeout=10, message="the initial management token never became known")
            self.assertEqual(status, 200, body)
            self.assertTrue(body["Healthy"])
            self.assertEqual(server.request("GET", "/v1/agent/health/live").text, "ok\n")
            poll_until(lambda: server.request("GET", "/v1/agent/health/ready").status == 200,
                       timeout=10, message="the server never turned ready")
            resp = server.request("PUT", "/v1/agent/health/ready")
            self.assertEqual(resp.status, 405)


if __name__ == "__main__":
    unittest.main()
