#include "etcd/lease_service.h"

#include <utility>

#include "common/limits.h"
#include "etcd/leader_relay.h"
#include "server/server.h"
#include "state/numbered_session.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;

namespace {

// Whether a refused SessionCreate refused an id already in use.
bool IsTakenId(const Status& status) {
  return status.message().find("already exists") != std::string_view::npos;
}

}  // namespace

LeaseService::LeaseService(server::Server& server, LeaderRelay* relay)
    : server_(server), relay_(relay), cluster_id_(ClusterIdOf(server)) {}

bool LeaseService::Relayed() const { return relay_ != nullptr && relay_->Relays(); }

LeaseService::~LeaseService() { *alive_ = false; }

ResponseHeader LeaseService::Header() const {
  return HeaderAt(server_, cluster_id_, server_.store().applied_index());
}

void LeaseService::Grant(const Client& client, LeaseGrantRequest request,
                         Done<LeaseGrantResponse> done) {
  if (Relayed()) return relay_->Call(Method::kLeaseGrant, client.token, request, std::move(done));
  if (EtcdError denied = MayWriteLease(client.can(), server_.options().node_name); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  if (request.ttl > limits::kLeaseTtlMaxSeconds) {
    return done({etcd_texts::LeaseTtlTooLarge(), {}});
  }
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  // etcd raises a short TTL (0 and negative ones too) to its minimum.
  const std::int64_t min_seconds = limits::kLeaseTtlMinNs / kNsPerSecond;
  const std::int64_t ttl = request.ttl < min_seconds ? min_seconds : request.ttl;
  const std::int64_t number = request.id != 0 ? request.id : server_.NewLeaseNumber();
  state::Session session;
  session.id = state::NumberedSessionId(number);
  if (server_.store().FindSession(session.id) != nullptr) {
    return done({etcd_texts::LeaseExists(), {}});
  }
  session.name = state::kEtcdLeaseSessionName;
  session.node = server_.options().node_name;
  session.ttl = std::to_string(ttl) + "s";
  session.ttl_ns = ttl * kNsPerSecond;
  session.behavior = state::Behavior::kDelete;
  std::weak_ptr<bool> alive = alive_;
  server_.Propose(
      state::SessionCreate{std::move(session)},
      [this, alive, number, ttl, done = std::move(done)](Result<state::ApplyResult> result) {
        if (alive.expired() || !*alive.lock()) return;
        Answer<LeaseGrantResponse> out;
        if (!result.ok()) {
          out.error = ErrorOfProposal(result.status());
        } else if (!result->status.ok()) {
          out.error = IsTakenId(result->status)
                          ? etcd_texts::LeaseExists()
                          : etcd_texts::Error(etcd_texts::GrpcCode::kInvalidArgument,
                                              std::string(result->status.message()));
        } else {
          out.response.header = HeaderAt(server_, cluster_id_, result->index);
          out.response.body.id = number;
          out.response.body.ttl = ttl;
        }
        done(std::move(out));
      });
}

void LeaseService::Revoke(const Client& client, LeaseIdRequest request,
                          Done<LeaseRevokeResponse> done) {
  if (Relayed()) return relay_->Call(Method::kLeaseRevoke, client.token, request, std::move(done));
  const state::SessionId id = state::NumberedSessionId(request.id);
  const state::Session* lease = server_.store().FindSession(id);
  if (lease == nullptr) return done({etcd_texts::LeaseNotFound(), {}});
  if (EtcdError denied = MayWriteLease(client.can(), lease->node); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  std::weak_ptr<bool> alive = alive_;
  server_.Propose(state::SessionDestroy{id, state::DestroyReason::kDestroyed},
                  [this, alive, done = std::move(done)](Result<state::ApplyResult> result) {
                    if (alive.expired() || !*alive.lock()) return;
                    Answer<LeaseRevokeResponse> out;
                    if (!result.ok()) {
                      out.error = ErrorOfProposal(result.status());
                    } else if (!result->status.ok()) {
                      // Ended between the check and the apply.
                      out.error = etcd_texts::LeaseNotFound();
                    } else {
                      out.response.header = HeaderAt(server_, cluster_id_, result->index);
                    }
                    done(std::move(out));
                  });
}

void LeaseService::KeepAlive(const Client& client, LeaseIdRequest request,
                             Done<LeaseKeepAliveResponse> done) {
  if (Relayed()) {
    return relay_->Call(Method::kLeaseKeepAlive, client.token, request, std::move(done));
  }
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  const std::int64_t number = request.id;
  // A lease that is gone answers TTL 0 below, whoever asks.
  if (const state::Session* lease = server_.store().FindSession(state::NumberedSessionId(number));
      lease != nullptr) {
    if (EtcdError denied = MayWriteLease(client.can(), lease->node); !denied.ok()) {
      return done({std::move(denied), {}});
    }
  }
  std::weak_ptr<bool> alive = alive_;
  server_.Renew(state::NumberedSessionId(number), [this, alive, number, done = std::move(done)](
                                                      Result<const state::Session*> session) {
    if (alive.expired() || !*alive.lock()) return;
    Answer<LeaseKeepAliveResponse> out;
    out.response.header = Header();
    out.response.body.id = number;
    if (session.ok()) {
      out.response.body.ttl = (*session)->ttl_ns / kNsPerSecond;
    } else if (session.status().code() != Code::kNotFound) {
      out.error = ErrorOfProposal(session.status());
    }
    // Not found: TTL 0, the lease is gone (or never was), as etcd answers.
    done(std::move(out));
  });
}

void LeaseService::TimeToLive(const Client& client, LeaseTimeToLiveRequest request,
                              Done<LeaseTimeToLiveResponse> done) {
  // The leader's timer is the one that ends leases.
  if (Relayed()) {
    return relay_->Call(Method::kLeaseTimeToLive, client.token, request, std::move(done));
  }
  if (!server_.IsLeader()) return done({etcd_texts::NotLeader(), {}});
  Answer<LeaseTimeToLiveResponse> out;
  out.response.header = Header();
  out.response.body.id = request.id;
  const state::SessionId id = state::NumberedSessionId(request.id);
  const state::Session* session = server_.store().FindSession(id);
  const std::optional<DurationMs> left = server_.SessionTtlRemainingMs(id);
  if (session == nullptr || !left.has_value() || server_.IsExpiring(id)) {
    out.response.body.ttl = -1;
    return done(std::move(out));
  }
  if (EtcdError denied = MayReadLease(client.can(), session->node); !denied.ok()) {
    return done({std::move(denied), {}});
  }
  out.response.body.ttl = *left / 1000;
  out.response.body.granted_ttl = session->ttl_ns / kNsPerSecond;
  if (request.keys) {
    if (const std::set<std::string>* keys = server_.store().HeldKeys(id); keys != nullptr) {
      out.response.body.keys.assign(keys->begin(), keys->end());
      acl::EraseUnreadableKeys(client.can(), out.response.body.keys,
                               [](const std::string& key) -> const std::string& { return key; });
    }
  }
  done(std::move(out));
}

Answer<LeaseLeasesResponse> LeaseService::Leases(const Client& client) const {
  Answer<LeaseLeasesResponse> out;
  out.response.header = Header();
  for (const state::Session* session : server_.store().ListSessions()) {
    std::optional<std::int64_t> number = state::SessionNumber(session->id.view());
    if (number.has_value() && client.can().SessionRead(session->node).allowed()) {
      out.response.body.leases.push_back({*number});
    }
  }
  return out;
}

}  // namespace tenure::etcd
