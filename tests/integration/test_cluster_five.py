"""Five servers as real processes (docs/cluster.md: 3- and 5-server clusters).

Losing two members at once (kill -9 of the leader and of a follower) leaves
a majority of three, which keeps taking writes through every survivor and
keeps sessions and locks. A third loss leaves no majority: writes are never
acknowledged, and are answered with Consul's 500 `No cluster leader` once
the survivors know there is no leader, while `?stale` reads still answer.
The killed members come back with their data and every acknowledged write is
on all five.
"""

import time
import unittest

from tenure_testlib import Cluster, poll_until


def put(member, key, value, timeout=10.0):
    try:
        resp = member.request("PUT", f"/v1/kv/{key}", value, timeout=timeout)
    except OSError:
        return None
    return resp


class FiveServersTest(unittest.TestCase):
    def test_two_losses_keep_working_three_stop_writes_and_all_recover(self):
        with Cluster(5) as cluster:
            members = cluster.members
            leader = cluster.leader()
            session = leader.put_json("/v1/session/create", {"TTL": "15s"})["ID"]
            self.assertIs(leader.put_json(f"/v1/kv/svc/leader?acquire={session}", "x"), True)
            acked = {}
            for i in range(10):
                self.assertEqual(put(leader, f"acked/{i}", f"v{i}").status, 200)
                acked[f"acked/{i}"] = f"v{i}"

            follower = next(m for m in members if m is not leader)
            leader.kill()
            follower.kill()
            killed = [leader, follower]
            survivors = [m for m in members if m not in killed]
            started = time.monotonic()
            new_leader = cluster.wait_leader(timeout=30)
            print(f"2 of 5 killed (node{cluster.id_of(leader)}, the leader, and "
                  f"node{cluster.id_of(follower)}); node{cluster.id_of(new_leader)} leads "
                  f"after {time.monotonic() - started:.2f}s", flush=True)

            # Every survivor takes writes (followers forward them).
            for member in survivors:
                key = f"after/{cluster.id_of(member)}"
                poll_until(lambda: (r := put(member, key, "y")) is not None and r.status == 200,
                           timeout=15, message=f"node{cluster.id_of(member)} took no write")
                acked[key] = "y"
            renew = survivors[0].request("PUT", f"/v1/session/renew/{session}")
            self.assertEqual(renew.status, 200, renew.text)
            entry = survivors[-1].get_json("/v1/kv/svc/leader")[0]
            self.assertEqual(entry["Session"], session, "the lock survived the two losses")

            # A third loss: two of five cannot commit anything.
            new_leader.kill()
            killed.append(new_leader)
            remaining = [m for m in survivors if m is not new_leader]
            answers = []

            def refused_for_want_of_a_leader():
                resp = put(remaining[0], "nomajority", "z", timeout=5.0)
                answers.append(resp.status if resp is not None else "timeout")
                return resp is not None and resp.status == 500 and "No cluster leader" in resp.text

            poll_until(refused_for_want_of_a_leader, timeout=20, interval=0.2,
                       message=f"writes without a majority were never refused: {answers[-5:]}")
            self.assertNotIn(200, answers, "a write was acknowledged without a majority")
            print(f"3 of 5 killed: {len(answers)} write attempts, none acknowledged, last "
                  f"answer 500 No cluster leader", flush=True)
            # Each survivor notices on its own election timer; until then it
            # still names the dead leader, as a Consul follower does.
            def stale_read_knows_no_leader():
                stale = remaining[1].request("GET", "/v1/kv/acked/3?stale")
                self.assertEqual(stale.status, 200, "a stale read must answer without a leader")
                return stale.header("X-Consul-KnownLeader") == "false"

            poll_until(stale_read_knows_no_leader, timeout=20, interval=0.1,
                       message="a survivor kept reporting a known leader")

            # The killed members come back with their data.
            for member in killed:
                member.start()
            final = cluster.wait_leader(timeout=30)
            self.assertEqual(put(final, "final", "f").status, 200)
            acked["final"] = "f"
            for member in members:
                def has_all(member=member):
                    got = {e["Key"]: e["Value"] for e in
                           member.get_json("/v1/kv/?recurse&stale")}
                    return all(k in got for k in acked)
                poll_until(has_all, timeout=20,
                           message=f"node{cluster.id_of(member)} lacks acknowledged writes")
                self.assertEqual(member.request("GET", "/v1/kv/nomajority?stale").status, 404,
                                 "a refused write appeared")
            print(f"all 5 back; {len(acked)} acknowledged writes on every member", flush=True)


if __name__ == "__main__":
    unittest.main()
