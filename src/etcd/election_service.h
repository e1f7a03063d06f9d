// etcd's Election and Lock services (v3electionpb, v3lockpb) over the same
// keys as the concurrency package's recipes (decision 0048 section 4):
// Campaign and Lock create `<name>/<lease in hex>` with the lease, by a Txn
// guarded by the key's create revision being 0 (a repeated call with the
// same lease resumes its key), then wait until no key under `<name>/` has
// a lower create revision. The holder's create revision is its fencing
// token. Proclaim and Resign are Txns guarded by that revision; Unlock
// deletes the key; Leader reads the key with the lowest create revision;
// Observe tells a stream each time that key or its value changes.
//
// Safety beyond etcd's: lease 0 is refused (a holder with no lease never
// ends); a wait ends with an error as soon as its own key goes (its lease
// ended or someone deleted it), never answering a holder whose key is gone
// (etcd 3.4 keeps waiting); a wait whose client went away deletes its key, as
// etcd's server does when the call's context ends. A wait is decided on
// this server's applied state, which is safe on any server: create
// revisions only grow, so no key a later entry creates can come before it.
// Transport-free, as KvService. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "etcd/kv_service.h"
#include "etcd/messages_services.h"
#include "server/server.h"

namespace tenure::etcd {

class ElectionService {
 public:
  ElectionService(server::Server& server, KvService& kv);
  ~ElectionService();
  ElectionService(const ElectionService&) = delete;
  ElectionService& operator=(const ElectionService&) = delete;

  // Each call is checked against `client`'s token (etcd/access.h): Campaign
  // and Lock need write on the own key and read on every key under
  // `<name>/` (the line it waits in); Proclaim, Resign and Unlock write
  // the holder's key; Leader and Observe read under `<name>/`.
  // Campaign and Lock return an id for Abandon (their client went away
  // before the answer); 0 when answered at once.
  std::uint64_t Campaign(const Client& client, CampaignRequest request,
                         Done<CampaignResponse> done);
  std::uint64_t Lock(const Client& client, LockRequest request, Done<LockResponse> done);
  void Abandon(std::uint64_t wait_id);
  void Proclaim(const Client& client, ProclaimRequest request, Done<ProclaimResponse> done);
  void Resign(const Client& client, ResignRequest request, Done<ResignResponse> done);
  void Unlock(const Client& client, UnlockRequest request, Done<UnlockResponse> done);
  void Leader(const Client& client, NameRequest request, Done<LeaderResponse> done);

  // Calls `each` with the election's leader now (if any) and at every
  // change of its key or value, until StopObserving. 0, with *refused
  // set, when the token may not read the election.
  std::uint64_t Observe(const Client& client, NameRequest request,
                        std::function<void(const LeaderResponse&)> each,
                        etcd_texts::EtcdError* refused);
  void StopObserving(std::uint64_t id);

  std::size_t waits() const { return waits_.size(); }

 private:
  struct Wait {
    std::string prefix;  // "<name>/"
    std::string key;
    LogIndex rev;  // the key's create revision
    std::int64_t lease = 0;
    Client client;           // who waits: its token gives the key back if abandoned
    ResponseHeader header;   // the answer's: the txn that made or found the key
    bool abandoned = false;  // its client went away: the key goes once made
    // On a follower the txn ran on the leader: decided once this server's
    // state holds its revision (decision 0055).
    bool awaiting_apply = false;
    std::function<void(etcd_texts::EtcdError, const Wait&)> done;
  };
  struct Observer {
    std::string prefix;
    std::string last_key;
    LogIndex last_mod;
    std::function<void(const LeaderResponse&)> each;
  };

  // Creates or resumes `<prefix><lease hex>` with `value` and waits.
  std::uint64_t Enter(const Client& client, std::string prefix, std::int64_t lease,
                      std::string value, bool proclaim,
                      std::function<void(etcd_texts::EtcdError, const Wait&)> done);
  // Runs `op` in a Txn guarded by the holder's key still having its create
  // revision (Proclaim, Resign).
  void AsHolder(const Client& client, bool has_leader, const LeaderKey& leader,
                state::EtcdRequestOp op, Done<TxnResponse> done);
  // Answers the wait if it is decided on the current state; true if it was.
  bool Decide(std::uint64_t id);
  void OnBatch(const server::Server::HistoryBatch& batch);
  void Tell(Observer& observer);
  // The key under `prefix` with the lowest create revision; null if none.
  const state::KvEntry* FirstUnder(const std::string& prefix) const;
  ResponseHeader Header(LogIndex revision) const;

  server::Server& server_;
  KvService& kv_;
  const std::uint64_t cluster_id_;
  std::uint64_t listener_id_ = 0;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Wait> waits_;
  std::map<std::uint64_t, Observer> observers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The key a lease holds in an election or lock `name`: "<name>/<hex>", the
// lease id as Go's %x writes an int64.
std::string RecipeKey(const std::string& name, std::int64_t lease);

}  // namespace tenure::etcd
