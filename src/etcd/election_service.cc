#include "etcd/election_service.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "common/etcd_texts.h"
#include "state/etcd_range.h"
#include "state/numbered_session.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using Kind = state::EtcdRequestOp::Kind;

std::string RecipeKey(const std::string& name, std::int64_t lease) {
  // Go's %x of a negative int64 is its magnitude with a minus sign.
  const std::uint64_t magnitude =
      lease < 0 ? ~static_cast<std::uint64_t>(lease) + 1 : static_cast<std::uint64_t>(lease);
  return name + "/" + (lease < 0 ? "-" : "") + fmt::format("{:x}", magnitude);
}

namespace {

state::EtcdCompare CreateRevisionIs(const std::string& key, LogIndex revision) {
  state::EtcdCompare compare;
  compare.result = state::EtcdCompareResult::kEqual;
  compare.target = state::EtcdCompareTarget::kCreate;
  compare.range = {key, ""};
  compare.number = static_cast<std::int64_t>(revision.value());
  return compare;
}

state::EtcdRequestOp PutOp(const std::string& key, std::string value, std::int64_t lease) {
  state::EtcdRequestOp op;
  op.kind = Kind::kPut;
  op.put.key = key;
  op.put.value = std::move(value);
  op.put.lease = lease;
  return op;
}

state::EtcdRequestOp DeleteOp(const std::string& key) {
  state::EtcdRequestOp op;
  op.kind = Kind::kDeleteRange;
  op.delete_range.range = {key, ""};
  return op;
}

}  // namespace

ElectionService::ElectionService(server::Server& server, KvService& kv)
    : server_(server), kv_(kv), cluster_id_(ClusterIdOf(server)) {
  listener_id_ = server_.AddHistoryListener(
      [this](const server::Server::HistoryBatch& batch) { OnBatch(batch); });
}

ElectionService::~ElectionService() {
  *alive_ = false;
  server_.RemoveHistoryListener(listener_id_);
}

ResponseHeader ElectionService::Header(LogIndex revision) const {
  return HeaderAt(server_, cluster_id_, revision);
}

const state::KvEntry* ElectionService::FirstUnder(const std::string& prefix) const {
  const state::KvEntry* first = nullptr;
  for (const state::KvEntry* entry : server_.store().ListRange(state::PrefixRangeOf(prefix))) {
    if (first == nullptr || entry->create_index < first->create_index) first = entry;
  }
  return first;
}

std::uint64_t ElectionService::Campaign(const Client& client, CampaignRequest request,
                                        Done<CampaignResponse> done) {
  const std::string name = request.name;
  return Enter(client, name + "/", request.lease, std::move(request.value), /*proclaim=*/true,
               [name, done = std::move(done)](EtcdError error, const Wait& wait) {
                 Answer<CampaignResponse> answer;
                 answer.error = std::move(error);
                 answer.response.header = wait.header;
                 answer.response.body.has_leader = true;
                 answer.response.body.leader = {
                     name, wait.key, static_cast<std::int64_t>(wait.rev.value()), wait.lease};
                 done(std::move(answer));
               });
}

std::uint64_t ElectionService::Lock(const Client& client, LockRequest request,
                                    Done<LockResponse> done) {
  return Enter(client, request.name + "/", request.lease, "", /*proclaim=*/false,
               [done = std::move(done)](EtcdError error, const Wait& wait) {
                 Answer<LockResponse> answer;
                 answer.error = std::move(error);
                 answer.response.header = wait.header;
                 answer.response.body.key = wait.key;
                 done(std::move(answer));
               });
}

std::uint64_t ElectionService::Enter(const Client& client, std::string prefix, std::int64_t lease,
                                     std::string value, bool proclaim,
                                     std::function<void(EtcdError, const Wait&)> done) {
  if (lease == 0) {
    done(etcd_texts::RecipeWithoutLease(), Wait{});
    return 0;
  }
  std::string name = prefix;
  name.pop_back();  // RecipeKey adds the '/'
  std::string key = RecipeKey(name, lease);
  if (EtcdError denied = MayEnter(client.can(), name, key); !denied.ok()) {
    done(std::move(denied), Wait{});
    return 0;
  }
  const std::uint64_t id = next_id_++;
  Wait& wait = waits_[id];
  wait.prefix = std::move(prefix);
  wait.key = std::move(key);
  wait.lease = lease;
  wait.client = client;
  wait.done = std::move(done);
  // The concurrency package's step: create the key unless this lease has
  // it already (then resume it, its value proclaimed if it differs).
  state::EtcdTxnRequest txn;
  txn.compare.push_back(CreateRevisionIs(wait.key, LogIndex()));
  txn.success.push_back(PutOp(wait.key, value, lease));
  state::EtcdRequestOp get;
  get.kind = Kind::kRange;
  get.range.range = {wait.key, ""};
  txn.failure.push_back(std::move(get));
  std::weak_ptr<bool> alive = alive_;
  kv_.Txn(client, std::move(txn),
          [this, alive, id, proclaim, value = std::move(value)](Answer<TxnResponse> answer) {
            if (alive.expired()) return;
            auto it = waits_.find(id);
            if (it == waits_.end()) return;
            Wait& made = it->second;
            if (!answer.error.ok()) {
              Wait over = std::move(made);
              waits_.erase(it);
              return over.done(answer.error, over);
            }
            made.header = answer.response.header;
            const state::EtcdTxnResponse& result = answer.response.body;
            if (result.succeeded) {
              made.rev = LogIndex(static_cast<std::uint64_t>(answer.response.header.revision));
            } else if (!result.responses.empty() && !result.responses[0].range.kvs.empty()) {
              const state::EtcdKeyValue& kv = result.responses[0].range.kvs[0];
              made.rev = LogIndex(static_cast<std::uint64_t>(kv.create_revision));
              if (proclaim && kv.value != value && !made.abandoned) {
                ProclaimRequest again;
                again.has_leader = true;
                again.leader = {"", made.key, kv.create_revision, made.lease};
                again.value = value;
                return Proclaim(made.client, std::move(again),
                                [this, alive, id](Answer<ProclaimResponse> said) {
                                  if (alive.expired()) return;
                                  auto found = waits_.find(id);
                                  if (found == waits_.end()) return;
                                  if (!said.error.ok()) {
                                    Wait over = std::move(found->second);
                                    waits_.erase(found);
                                    return over.done(said.error, over);
                                  }
                                  Decide(id);
                                });
              }
            }
            Decide(id);
          });
  return id;
}

bool ElectionService::Decide(std::uint64_t id) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return true;
  Wait& wait = it->second;
  if (wait.rev.is_none()) return false;  // its txn is in flight
  const state::Store& store = server_.store();
  // A txn relayed to the leader answers before this server applies it.
  wait.awaiting_apply =
      store.applied_index().value() < static_cast<std::uint64_t>(wait.header.revision);
  if (wait.awaiting_apply) return false;
  auto finish = [&](EtcdError error) {
    Wait over = std::move(wait);
    waits_.erase(it);
    if (over.abandoned) return;
    over.done(std::move(error), over);
  };
  const state::KvEntry* mine = store.FindKv(wait.key);
  if (mine == nullptr || mine->create_index != wait.rev) {
    // Its lease ended (the key went with it) or someone deleted the key:
    // never answer a holder whose key is gone.
    const bool lease_gone = store.FindSession(state::NumberedSessionId(wait.lease)) == nullptr;
    finish(lease_gone ? etcd_texts::LeaseNotFound() : etcd_texts::RecipeKeyGone(wait.key));
    return true;
  }
  if (wait.abandoned) {
    // Its client went away: give the key back, as etcd's server does.
    state::EtcdTxnRequest txn;
    txn.compare.push_back(CreateRevisionIs(wait.key, wait.rev));
    txn.success.push_back(DeleteOp(wait.key));
    kv_.Txn(wait.client, std::move(txn), [](Answer<TxnResponse>) {});
    finish({});
    return true;
  }
  // etcd's waitDeletes: the turn comes when no key under the prefix has a
  // lower create revision.
  for (const state::KvEntry* entry : store.ListRange(state::PrefixRangeOf(wait.prefix))) {
    if (entry->create_index < wait.rev) return false;
  }
  finish({});
  return true;
}

void ElectionService::Abandon(std::uint64_t wait_id) {
  auto it = waits_.find(wait_id);
  if (it == waits_.end()) return;
  it->second.abandoned = true;
  Decide(wait_id);  // a wait whose txn is in flight is decided when it answers
}

void ElectionService::OnBatch(const server::Server::HistoryBatch& batch) {
  if (waits_.empty() && observers_.empty()) return;
  const bool replaced = batch.replaced_at.has_value();
  auto touches = [&batch, replaced](const std::string& prefix, bool deletes_only) {
    if (replaced) return true;
    for (const state::KvEvent& event : batch.events) {
      if ((!deletes_only || event.is_delete()) && event.key().starts_with(prefix)) return true;
    }
    return false;
  };
  // Waits move only when a key under their prefix goes (or the state was
  // replaced); observers at any change under theirs.
  std::vector<std::uint64_t> due;
  for (const auto& [id, wait] : waits_) {
    if (wait.awaiting_apply || touches(wait.prefix, /*deletes_only=*/true)) due.push_back(id);
  }
  for (std::uint64_t id : due) Decide(id);
  std::vector<std::uint64_t> watching;
  for (const auto& [id, observer] : observers_) {
    if (touches(observer.prefix, /*deletes_only=*/false)) watching.push_back(id);
  }
  for (std::uint64_t id : watching) {
    auto it = observers_.find(id);
    if (it != observers_.end()) Tell(it->second);
  }
}

void ElectionService::AsHolder(const Client& client, bool has_leader, const LeaderKey& leader,
                               state::EtcdRequestOp op, Done<TxnResponse> done) {
  // etcd's server resumes the holder's session first: its lease must live.
  if (!has_leader) return done({etcd_texts::MissingLeaderKey(), {}});
  if (server_.store().FindSession(state::NumberedSessionId(leader.lease)) == nullptr) {
    return done({etcd_texts::LeaseNotFound(), {}});
  }
  state::EtcdTxnRequest txn;
  txn.compare.push_back(
      CreateRevisionIs(leader.key, LogIndex(static_cast<std::uint64_t>(leader.rev))));
  txn.success.push_back(std::move(op));
  // The txn's own check is the holder's: read and write on its key.
  kv_.Txn(client, std::move(txn), std::move(done));
}

void ElectionService::Proclaim(const Client& client, ProclaimRequest request,
                               Done<ProclaimResponse> done) {
  state::EtcdRequestOp put =
      PutOp(request.leader.key, std::move(request.value), request.leader.lease);
  AsHolder(client, request.has_leader, request.leader, std::move(put),
           [done = std::move(done)](Answer<TxnResponse> answer) {
             Answer<ProclaimResponse> out;
             out.response.header = answer.response.header;
             out.error = answer.error;
             if (out.error.ok() && !answer.response.body.succeeded) {
               out.error = etcd_texts::ElectionNotLeader();
             }
             done(std::move(out));
           });
}

void ElectionService::Resign(const Client& client, ResignRequest request,
                             Done<ResignResponse> done) {
  // A resign by a holder that no longer holds changes nothing and is no
  // error (the concurrency package's Resign).
  AsHolder(client, request.has_leader, request.leader, DeleteOp(request.leader.key),
           [done = std::move(done)](Answer<TxnResponse> answer) {
             done({answer.error, {answer.response.header, {}}});
           });
}

void ElectionService::Unlock(const Client& client, UnlockRequest request,
                             Done<UnlockResponse> done) {
  state::EtcdDeleteRangeRequest del;
  del.range = {std::move(request.key), ""};
  kv_.DeleteRange(client, std::move(del),
                  [done = std::move(done)](Answer<DeleteRangeResponse> answer) {
                    done({answer.error, {answer.response.header, {}}});
                  });
}

void ElectionService::Leader(const Client& client, NameRequest request, Done<LeaderResponse> done) {
  state::EtcdRangeRequest range;
  range.range = state::PrefixRangeOf(request.name + "/");
  range.sort_order = state::EtcdSortOrder::kAscend;
  range.sort_target = state::EtcdSortTarget::kCreate;
  range.limit = 1;
  kv_.Range(client, std::move(range), [done = std::move(done)](Answer<RangeResponse> answer) {
    Answer<LeaderResponse> out;
    out.error = answer.error;
    out.response.header = answer.response.header;
    if (out.error.ok() && answer.response.body.kvs.empty()) {
      out.error = etcd_texts::ElectionNoLeader();
    } else if (out.error.ok()) {
      out.response.body.has_kv = true;
      out.response.body.kv = answer.response.body.kvs[0];
    }
    done(std::move(out));
  });
}

std::uint64_t ElectionService::Observe(const Client& client, NameRequest request,
                                       std::function<void(const LeaderResponse&)> each,
                                       EtcdError* refused) {
  if (EtcdError denied = MayObserve(client.can(), request.name); !denied.ok()) {
    *refused = std::move(denied);
    return 0;
  }
  const std::uint64_t id = next_id_++;
  Observer& observer = observers_[id];
  observer.prefix = request.name + "/";
  observer.each = std::move(each);
  Tell(observer);
  return id;
}

void ElectionService::StopObserving(std::uint64_t id) { observers_.erase(id); }

void ElectionService::Tell(Observer& observer) {
  // As the concurrency package's Observe: the leader's key, again at each
  // change of its value; nothing while there is none.
  const state::KvEntry* first = FirstUnder(observer.prefix);
  if (first == nullptr) return;
  if (first->key == observer.last_key && first->modify_index == observer.last_mod) return;
  observer.last_key = first->key;
  observer.last_mod = first->modify_index;
  LeaderResponse response;
  response.header = Header(server_.store().applied_index());
  response.body.has_kv = true;
  response.body.kv = state::ToEtcdKeyValue(*first);
  observer.each(response);
}

}  // namespace tenure::etcd
