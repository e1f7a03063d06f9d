// etcd's KV service over the Server (decision 0048 sections 1 and 5): each
// request checked as etcd's API checks it, a write proposed as one EtcdTxn
// and answered with its entry's revision, a read served from this server's
// state (serializable), after the leader's barrier (linearizable), or at a
// past revision from the history window. Transport-free: the gRPC and
// gateway layers hand decoded requests in and encode what comes back. A
// linearizable read or a write on a follower goes to the leader through the
// LeaderRelay (decision 0055), or answers NotLeader where there is none.
// Loop thread only.
#pragma once

#include <functional>
#include <memory>

#include "common/etcd_texts.h"
#include "common/status.h"
#include "common/types.h"
#include "etcd/access.h"
#include "etcd/messages.h"
#include "etcd/messages_services.h"

namespace tenure::server {
class Server;
}

namespace tenure::etcd {

// An answer: the response, or the error (when not ok()).
template <typename Response>
struct Answer {
  etcd_texts::EtcdError error;
  Response response;
};
template <typename Response>
using Done = std::function<void(Answer<Response>)>;

// etcd's cluster_id for this cluster: the first 8 bytes of SHA-256 of
// "tenure/" + datacenter (computed once per service, not per answer).
std::uint64_t ClusterIdOf(const server::Server& server);

// An answer's header at `revision`: the cluster's id, this server's raft id
// as member_id, and the raft term it knows.
ResponseHeader HeaderAt(const server::Server& server, std::uint64_t cluster_id, LogIndex revision);

// A failed proposal or barrier as etcd answers it: refused before the log
// (leader changed), fate unknown (timed out, possibly due to previous leader
// failure), shutting down (server stopped).
etcd_texts::EtcdError ErrorOfProposal(const Status& status);

class LeaderRelay;

class KvService {
 public:
  // `relay`: as LeaseService's.
  explicit KvService(server::Server& server, LeaderRelay* relay = nullptr);
  ~KvService();
  KvService(const KvService&) = delete;
  KvService& operator=(const KvService&) = delete;

  // Each call is checked against `client`'s token (etcd/access.h) where it
  // runs: here, or on the leader it is relayed to with the token.
  void Range(const Client& client, state::EtcdRangeRequest request, Done<RangeResponse> done);
  void Put(const Client& client, state::EtcdPutRequest request, Done<PutResponse> done);
  void DeleteRange(const Client& client, state::EtcdDeleteRangeRequest request,
                   Done<DeleteRangeResponse> done);
  void Txn(const Client& client, state::EtcdTxnRequest request, Done<TxnResponse> done);
  void Compact(const Client& client, CompactionRequest request, Done<CompactionResponse> done);

  // A range read now from this server's state (or its window for a past
  // revision), with no barrier: what a serializable Range answers.
  Answer<RangeResponse> ReadRange(const state::EtcdRangeRequest& request) const;
  // Its body alone (a txn's ranges share the txn's header).
  etcd_texts::EtcdError ReadRangeBody(const state::EtcdRangeRequest& request,
                                      state::EtcdRangeResponse* out) const;

 private:
  // Proposes one txn; `done` gets the applied response or the error.
  void ProposeTxn(state::EtcdTxnRequest txn, Done<TxnResponse> done);
  // Runs `read` now (serializable) or after the leader's barrier.
  void Linearized(bool serializable, std::function<void(etcd_texts::EtcdError)> read);
  Answer<TxnResponse> ReadTxn(const state::EtcdTxnRequest& txn) const;
  etcd_texts::EtcdError RunReadOnly(const state::EtcdTxnRequest& txn,
                                    state::EtcdTxnResponse* out) const;
  // An answer's header at `revision`: cluster_id, member_id (the raft id), term.
  ResponseHeader Header(LogIndex revision) const;
  bool Relayed() const;

  server::Server& server_;
  LeaderRelay* const relay_;
  const std::uint64_t cluster_id_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::etcd
