// etcd's Lease service over the Server (decision 0048 section 3): a lease is
// a numbered tenure session. Grant proposes a SessionCreate (behavior
// delete, etcd's TTL range), Revoke a SessionDestroy, KeepAlive is the
// Server's Renew (no log entry; the shared barrier on a cluster),
// TimeToLive reads the leader's timer, Leases lists the numbered sessions.
// A lease ends only when the leader decides its TTL x (1 + rho) passed
// since the last acknowledged renewal, never early, across leader changes
// too (decision 0011). Transport-free, as KvService. Loop thread only.
#pragma once

#include <memory>

#include "etcd/kv_service.h"
#include "etcd/messages_services.h"

namespace tenure::etcd {

class LeaderRelay;

class LeaseService {
 public:
  // `relay`: where calls go that need the leader while this server does not
  // lead; null: they answer "etcdserver: not leader" (the leader's side of a
  // relayed call, and tests of one server).
  explicit LeaseService(server::Server& server, LeaderRelay* relay = nullptr);
  ~LeaseService();
  LeaseService(const LeaseService&) = delete;
  LeaseService& operator=(const LeaseService&) = delete;

  // Each checked against `client`'s token where it runs (etcd/access.h):
  // session write on the lease's node (the leader's, for a grant), read for
  // TimeToLive, whose keys leave out those the token may not read.
  void Grant(const Client& client, LeaseGrantRequest request, Done<LeaseGrantResponse> done);
  void Revoke(const Client& client, LeaseIdRequest request, Done<LeaseRevokeResponse> done);
  // One renewal, as one message of a keep-alive stream: TTL 0 for a lease
  // that never existed or has ended (the stream goes on, as etcd's).
  void KeepAlive(const Client& client, LeaseIdRequest request, Done<LeaseKeepAliveResponse> done);
  void TimeToLive(const Client& client, LeaseTimeToLiveRequest request,
                  Done<LeaseTimeToLiveResponse> done);
  // This server's list (etcd 3.4's members answer it from their own
  // lessor), without the leases whose node the token may not read.
  Answer<LeaseLeasesResponse> Leases(const Client& client) const;

 private:
  ResponseHeader Header() const;
  bool Relayed() const;

  server::Server& server_;
  LeaderRelay* const relay_;
  const std::uint64_t cluster_id_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::etcd
