#include "etcd/kv_service.h"

#include <openssl/sha.h>

#include <utility>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "etcd/leader_relay.h"
#include "etcd/proto_codec.h"
#include "server/server.h"
#include "state/etcd_check.h"
#include "state/etcd_range.h"
#include "state/numbered_session.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;

namespace {

// etcd's rule for a write's size: the request as etcd marshals it (what
// EncodeProto writes), inside etcd's own envelope, at most
// --max-request-bytes' default. Checked before anything else is asked of
// the request (its ACL, its lease), as etcd checks it as it proposes.
template <typename M>
EtcdError CheckRequestSize(const M& request) {
  if (ProtoSize(request) + limits::kEtcdRequestEnvelopeBytes > limits::kEtcdRequestBytesMax) {
    return etcd_texts::RequestTooLarge();
  }
  return {};
}

}  // namespace

// The ops of a read-only txn, with every compare decided first (as a
// write's are, on the state before it); a range at a past revision reads
// the history window as a Range does, and its refusal is the txn's.
EtcdError KvService::RunReadOnly(const state::EtcdTxnRequest& txn,
                                 state::EtcdTxnResponse* out) const {
  const state::Store& store = server_.store();
  bool holds = true;
  for (const state::EtcdCompare& c : txn.compare) {
    if (!state::CompareHolds(c, store.ListRange(c.range))) {
      holds = false;
      break;
    }
  }
  out->succeeded = holds;
  for (const state::EtcdRequestOp& op : holds ? txn.success : txn.failure) {
    state::EtcdResponseOp& answer = out->responses.emplace_back();
    answer.kind = op.kind;
    if (op.kind == state::EtcdRequestOp::Kind::kRange) {
      if (EtcdError e = ReadRangeBody(op.range, &answer.range); !e.ok()) return e;
      answer.revision = static_cast<std::int64_t>(store.applied_index().value());
    } else if (op.kind == state::EtcdRequestOp::Kind::kTxn && op.txn.size() == 1) {
      if (EtcdError e = RunReadOnly(op.txn.front(), &answer.txn.emplace_back()); !e.ok()) {
        return e;
      }
    }
  }
  return {};
}

namespace {

// A txn is served as a serializable read only when every range in it says so.
bool AllSerializable(const state::EtcdTxnRequest& txn) {
  for (const auto* ops : {&txn.success, &txn.failure}) {
    for (const state::EtcdRequestOp& op : *ops) {
      if (op.kind == state::EtcdRequestOp::Kind::kRange && !op.range.serializable) return false;
      if (op.kind == state::EtcdRequestOp::Kind::kTxn && op.txn.size() == 1 &&
          !AllSerializable(op.txn.front())) {
        return false;
      }
    }
  }
  return true;
}

state::EtcdRequestOp OpOf(state::EtcdRequestOp::Kind kind) {
  state::EtcdRequestOp op;
  op.kind = kind;
  return op;
}

}  // namespace

std::uint64_t ClusterIdOf(const server::Server& server) {
  const std::string seed = "tenure/" + server.options().datacenter;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(seed.data()), seed.size(), digest);
  std::uint64_t cluster_id = 0;
  for (int i = 0; i < 8; ++i) cluster_id = (cluster_id << 8) | digest[i];
  return cluster_id;
}

ResponseHeader HeaderAt(const server::Server& server, std::uint64_t cluster_id, LogIndex revision) {
  ResponseHeader header;
  header.cluster_id = cluster_id;
  header.member_id = server.NodeId();
  header.revision = static_cast<std::int64_t>(revision.value());
  header.raft_term = server.Health().term;
  return header;
}

ResponseHeader KvService::Header(LogIndex revision) const {
  return HeaderAt(server_, cluster_id_, revision);
}

EtcdError ErrorOfProposal(const Status& status) {
  const std::string_view message = status.message();
  if (message.find("outcome unknown") != std::string_view::npos) {
    return etcd_texts::TimeoutDueToLeaderFail();
  }
  if (message.find("shutting down") != std::string_view::npos) return etcd_texts::Stopped();
  if (status.code() == Code::kNotLeader) return etcd_texts::LeaderChanged();
  if (status.code() == Code::kTimeout) return etcd_texts::RequestTimeout();
  return etcd_texts::Error(etcd_texts::GrpcCode::kUnavailable, std::string(message));
}

KvService::KvService(server::Server& server, LeaderRelay* relay)
    : server_(server), relay_(relay), cluster_id_(ClusterIdOf(server)) {}

bool KvService::Relayed() const { return relay_ != nullptr && relay_->Relays(); }

KvService::~KvService() { *alive_ = false; }

Answer<RangeResponse> KvService::ReadRange(const state::EtcdRangeRequest& request) const {
  Answer<RangeResponse> out;
  out.response.header = Header(server_.store().applied_index());
  out.error = ReadRangeBody(request, &out.response.body);
  return out;
}

EtcdError KvService::ReadRangeBody(const state::EtcdRangeRequest& request,
                                   state::EtcdRangeResponse* out) const {
  const state::Store& store = server_.store();
  const LogIndex applied = store.applied_index();
  if (request.revision > 0 && static_cast<std::uint64_t>(request.revision) > applied.value()) {
    return etcd_texts::FutureRevision();
  }
  if (request.revision <= 0 || static_cast<std::uint64_t>(request.revision) == applied.value()) {
    *out = state::EvaluateRange(store.ListRange(request.range), request);
    return {};
  }
  const state::EventLog* history = server_.history();
  const LogIndex revision(static_cast<std::uint64_t>(request.revision));
  if (history == nullptr || revision < history->read_floor()) return etcd_texts::Compacted();
  state::EventLog::Read read = history->ReadAt(store, request.range, revision);
  if (read.refusal != state::EventLog::Refusal::kNone) {
    return read.refusal == state::EventLog::Refusal::kFuture ? etcd_texts::FutureRevision()
                                                             : etcd_texts::Compacted();
  }
  *out = state::EvaluateRange(read.entries, request);
  return {};
}

void KvService::Linearized(bool serializable, std::function<void(EtcdError)> read) {
  if (serializable) return read({});
  if (!server_.IsLeader()) return read(etcd_texts::NotLeader());
  std::weak_ptr<bool> alive = alive_;
  server_.Barrier([alive, read = std::move(read)](Status status) {
    if (alive.expired() || !*alive.lock()) return;
    read(status.ok() ? EtcdError{} : ErrorOfProposal(status));
  });
}

void KvService::Range(const Client& client, state::EtcdRangeRequest request,
                      Done<RangeResponse> done) {
  if (EtcdError refused = state::CheckEtcdRange(request); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  const bool serializable = request.serializable;
  if (!serializable && Relayed()) {
    return relay_->Call(Method::kRange, client.token, request, std::move(done));
  }
  if (EtcdError denied = MayRange(client.can(), request); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  Linearized(serializable, [this, request = std::move(request), done](EtcdError error) {
    if (!error.ok()) return done({std::move(error), {}});
    done(ReadRange(request));
  });
}

Answer<TxnResponse> KvService::ReadTxn(const state::EtcdTxnRequest& txn) const {
  Answer<TxnResponse> out;
  out.response.header = Header(server_.store().applied_index());
  out.error = RunReadOnly(txn, &out.response.body);
  return out;
}

void KvService::ProposeTxn(state::EtcdTxnRequest txn, Done<TxnResponse> done) {
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  std::weak_ptr<bool> alive = alive_;
  server_.Propose(state::EtcdTxn{std::move(txn)},
                  [this, alive, done = std::move(done)](Result<state::ApplyResult> result) {
                    if (alive.expired() || !*alive.lock()) return;
                    Answer<TxnResponse> out;
                    if (!result.ok()) {
                      out.error = ErrorOfProposal(result.status());
                    } else if (!result->etcd_error.ok()) {
                      out.error = std::move(result->etcd_error);
                    } else if (!result->status.ok()) {
                      // A field the checks let through and the state refused.
                      out.error = etcd_texts::Error(etcd_texts::GrpcCode::kInvalidArgument,
                                                    std::string(result->status.message()));
                    } else {
                      out.response.header = Header(result->index);
                      out.response.body = std::move(result->etcd);
                    }
                    done(std::move(out));
                  });
}

void KvService::Txn(const Client& client, state::EtcdTxnRequest request, Done<TxnResponse> done) {
  // A txn that only reads is answered here from this server's state and
  // history window, so it may read the past (concurrency.NewSTM does).
  const bool writes = state::EtcdTxnWrites(request);
  if (EtcdError refused = state::CheckEtcdTxn(request, !writes); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  // etcd proposes only a txn that writes; one that reads is answered from
  // the store, whatever its size.
  if (EtcdError refused = writes ? CheckRequestSize(request) : EtcdError(); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  const bool serializable = AllSerializable(request);
  if ((writes || !serializable) && Relayed()) {
    return relay_->Call(Method::kTxn, client.token, request, std::move(done));
  }
  if (EtcdError denied = MayTxn(client.can(), request); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  if (writes) return ProposeTxn(std::move(request), std::move(done));
  Linearized(serializable, [this, request = std::move(request), done](EtcdError error) {
    if (!error.ok()) return done({std::move(error), {}});
    done(ReadTxn(request));
  });
}

void KvService::Put(const Client& client, state::EtcdPutRequest request, Done<PutResponse> done) {
  if (EtcdError refused = state::CheckEtcdPut(request); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  if (EtcdError refused = CheckRequestSize(request); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  if (Relayed()) return relay_->Call(Method::kPut, client.token, request, std::move(done));
  if (EtcdError denied = MayPut(client.can(), request); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  // etcd looks a Put's lease up before its key (ignore_value and
  // ignore_lease need one); inside a txn the other way round, as the state
  // applies it. A lease that ends before the entry applies is refused there.
  if (request.lease != 0 &&
      server_.store().FindSession(state::NumberedSessionId(request.lease)) == nullptr) {
    return done({etcd_texts::LeaseNotFound(), {}});
  }
  state::EtcdTxnRequest txn;
  txn.success.push_back(OpOf(state::EtcdRequestOp::Kind::kPut));
  txn.success.back().put = std::move(request);
  ProposeTxn(std::move(txn), [done = std::move(done)](Answer<TxnResponse> answer) {
    Answer<PutResponse> out{std::move(answer.error), {answer.response.header, {}}};
    if (out.error.ok() && answer.response.body.responses.size() == 1) {
      out.response.body = std::move(answer.response.body.responses.front().put);
    }
    done(std::move(out));
  });
}

void KvService::DeleteRange(const Client& client, state::EtcdDeleteRangeRequest request,
                            Done<DeleteRangeResponse> done) {
  if (EtcdError refused = state::CheckEtcdDeleteRange(request); !refused.ok()) {
    return done({std::move(refused), {}});
  }
  if (Relayed()) {
    return relay_->Call(Method::kDeleteRange, client.token, request, std::move(done));
  }
  if (EtcdError denied = MayDeleteRange(client.can(), request); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  state::EtcdTxnRequest txn;
  txn.success.push_back(OpOf(state::EtcdRequestOp::Kind::kDeleteRange));
  txn.success.back().delete_range = std::move(request);
  ProposeTxn(std::move(txn), [done = std::move(done)](Answer<TxnResponse> answer) {
    Answer<DeleteRangeResponse> out{std::move(answer.error), {answer.response.header, {}}};
    if (out.error.ok() && answer.response.body.responses.size() == 1) {
      out.response.body = std::move(answer.response.body.responses.front().delete_range);
    }
    done(std::move(out));
  });
}

// Compact(rev) at or below the replicated compact revision is compacted,
// above the applied index a future revision (etcd's checks before it
// proposes); else it answers once applied (etcd's `physical` always holds).
void KvService::Compact(const Client& client, CompactionRequest request,
                        Done<CompactionResponse> done) {
  // The leader's state decides (this one's may lag behind it).
  if (Relayed()) return relay_->Call(Method::kCompact, client.token, request, std::move(done));
  if (EtcdError denied = MayOperate(client.can()); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  const state::Store& store = server_.store();
  if (request.revision <= 0 ||
      static_cast<std::uint64_t>(request.revision) <= store.compact_revision().value()) {
    return done({etcd_texts::Compacted(), {}});
  }
  if (static_cast<std::uint64_t>(request.revision) > store.applied_index().value()) {
    return done({etcd_texts::FutureRevision(), {}});
  }
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  std::weak_ptr<bool> alive = alive_;
  server_.Propose(state::EtcdCompact{LogIndex(static_cast<std::uint64_t>(request.revision))},
                  [this, alive, done = std::move(done)](Result<state::ApplyResult> result) {
                    if (alive.expired() || !*alive.lock()) return;
                    Answer<CompactionResponse> out;
                    if (!result.ok()) {
                      out.error = ErrorOfProposal(result.status());
                    } else if (!result->etcd_error.ok()) {
                      out.error = std::move(result->etcd_error);
                    } else {
                      out.response.header = Header(result->index);
                    }
                    done(std::move(out));
                  });
}

}  // namespace tenure::etcd
