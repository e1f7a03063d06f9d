// Workload: simulated clients of the cluster, each a small state machine
// that behaves like a Consul client using sessions and locks:
//
//  - creates a TTL session (random TTL and lock-delay, release or delete),
//    renews it every TTL/2 on whichever server says it leads, now and then
//    stops renewing for a while but keeps working (so sessions expire under
//    clients that still use them), or destroys it;
//  - acquires and releases a few lock keys, runs transactions that lock,
//    unlock, check its session or its fencing token and write, and writes
//    plain keys (set, CAS, delete, delete-CAS, delete-tree);
//  - one request at a time, abandoned after a timeout (its outcome then
//    unknown, as over HTTP).
//
// Requests go to a server whose raft state is leader, stale or not, as a
// client that followed a redirect would. All randomness comes from the Rng.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster.h"
#include "rng.h"

namespace tenure::sim {

struct WorkloadOptions {
  unsigned clients = 5;
  std::vector<std::string> lock_keys = {"lock/a", "lock/b", "lock/c"};
  std::vector<std::string> kv_keys = {"kv/0", "kv/1", "kv/2"};
  DurationMs ttl_min_ms = 10'000;  // Consul's minimum TTL
  DurationMs ttl_max_ms = 30'000;
  DurationMs lock_delay_max_ms = 15'000;
  RealMs think_max_ms = 2'000;
  RealMs request_timeout_ms = 5'000;
  // Percent of requests that change the ACL tables (policies, tokens, the
  // built-ins), so that they are replicated, snapshotted and compared at
  // checkpoints with everything else. 0 keeps every seed's history as it
  // was before ACLs existed.
  unsigned acl_percent = 0;
  // Percent of a session holder's requests that use the fair acquire's
  // queue (decision 0027): enqueue or give up (dequeue). The grant after a
  // lock-delay window is the leader's duty, proposed by SimServer as by
  // Server (LeaderDuties::DueQueueGrants). 0 keeps every seed as it was.
  unsigned queue_percent = 0;
  // Percent of requests that carry a large restore's chunks (decision 0050):
  // each client stages bytes chunk after chunk (a new restore now and then,
  // a lost chunk now and then) and, once all are staged, asks for the swap,
  // which decodes them and refuses them (they are no snapshot). So every
  // replica stages and drops the same bytes across leader changes,
  // restarts and installs, and takes no raft snapshot while a staging is
  // open, with the workload's state kept. 0 keeps every seed as it was.
  unsigned restore_percent = 0;
  // Percent of new sessions that are etcd leases (numbered sessions,
  // decision 0048): an id the client draws as etcd's clients may, a TTL of
  // 2 to 10 s, its keys deleted when it ends, no lock-delay, renewed every
  // third of its TTL as clientv3's keep-alive does. The leader ends them at
  // TTL x (1 + rho), which the checkers hold to TTL in real time. Needs a
  // clock-rate bound within rho (--drift-ppm at most 10,000). 0 keeps every
  // seed as it was.
  unsigned lease_percent = 0;
};

class Workload {
 public:
  Workload(Cluster* cluster, Rng rng, WorkloadOptions options);

  // Every client whose turn has come acts.
  void Step();
  // From now on clients neither renew nor send anything.
  void Quiesce() { quiesced_ = true; }
  std::string Summary() const;

 private:
  struct Client {
    unsigned id = 0;
    state::SessionId session;
    DurationNs ttl_ns = 0;
    bool lease = false;  // the session is an etcd lease (lease_percent)
    RealMs next_renewal_at = 0;
    RealMs silent_until = 0;
    RealMs next_request_at = 0;
    std::uint64_t in_flight = 0;  // request number, 0 = idle
    RealMs in_flight_deadline = 0;
    std::map<std::string, LogIndex> held;  // key -> token, as this client believes
    unsigned sessions_made = 0;
    // Its large restore (restore_percent): id 0 = none begun.
    std::uint64_t restore_id = 0;
    std::uint64_t restore_offset = 0;
    std::uint64_t restore_total = 0;
  };
  using OnAnswer = void (Workload::*)(Client&, const state::CommandBody&,
                                      const Result<state::ApplyResult>&);

  void Act(Client& client);
  void Renew(Client& client);
  void OnRenewAnswer(Client& client, const Status& renewed);
  void Send(Client& client, state::CommandBody body, OnAnswer on_answer);
  std::optional<unsigned> PickServer();
  state::CommandBody NewSession(Client& client);
  state::CommandBody LockOp(Client& client);
  state::CommandBody TxnOp(Client& client);
  state::CommandBody KvOp(Client& client);
  const std::string& AnyKey();
  std::string Value(const Client& client);

  void OnSessionAnswer(Client& client, const state::CommandBody& body,
                       const Result<state::ApplyResult>& result);
  void OnLockAnswer(Client& client, const state::CommandBody& body,
                    const Result<state::ApplyResult>& result);
  void OnOtherAnswer(Client& client, const state::CommandBody& body,
                     const Result<state::ApplyResult>& result);
  void OnAclAnswer(Client& client, const state::CommandBody& body,
                   const Result<state::ApplyResult>& result);
  void ForgetSession(Client& client);
  state::CommandBody AclOp();
  state::CommandBody QueueOp(Client& client);
  bool RestoresOn() const;
  state::CommandBody RestoreOp(Client& client);
  void OnRestoreAnswer(Client& client, const state::CommandBody& body,
                       const Result<state::ApplyResult>& result);

  Cluster* cluster_;
  Rng rng_;
  Rng acl_rng_{0};      // its own stream, drawn only with acl_percent
  Rng queue_rng_{0};    // its own stream, drawn only with queue_percent
  Rng restore_rng_{0};  // its own stream, drawn only with restore_percent
  Rng lease_rng_{0};    // its own stream, drawn only with lease_percent
  // The renewal interval after a renewal or create: half the TTL (Consul's
  // clients), a third for a lease (clientv3's keep-alive).
  RealMs RenewalIntervalMs(const Client& client) const;
  WorkloadOptions options_;
  std::vector<Client> clients_;
  bool quiesced_ = false;
  std::uint64_t next_request_ = 1;
  std::uint64_t seq_ = 0;
  std::map<std::string, std::uint64_t> counts_;
};

}  // namespace tenure::sim
