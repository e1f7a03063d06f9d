// LockHistory: per lock key, the last grants of the lock and how each ended
// (docs/history.md, docs/decisions/0025-election-history.md). Part of the
// replicated state: the Store records grants and ends in the same apply that
// changes a key's holder, with the command's leader-stamped time, so every
// replica holds the same history. Bounded twice: kGrantsPerKey grants per
// key (oldest dropped) and kKeysMax keys (the key whose history changed
// least recently is dropped, ties by key order). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/coding.h"
#include "common/status.h"
#include "common/types.h"
#include "state/types.h"

namespace tenure::state {

// How a grant ended. kNone while it is held. The wire names are
// EndCauseName's; values are the snapshot encoding, never renumber.
enum class EndCause : std::uint8_t {
  kNone = 0,
  kRelease = 1,    // ?release= or a txn unlock by the holder
  kDestroy = 2,    // the holder's session was destroyed
  kTtlExpiry = 3,  // the holder's session's TTL ran out (the leader's timer)
  kHandoff = 4,    // released and granted to another session in the same txn
  kDelete = 5,     // the key was deleted while held
  kLockDelay = 6,  // reserved: never recorded (a grant cannot end by lock-delay)
};
constexpr std::uint8_t kEndCauseMax = 6;

// "release", "destroy", "ttl-expiry", "handoff", "delete", "lock-delay"; "" for kNone.
std::string_view EndCauseName(EndCause cause);

struct LockGrant {
  LogIndex fence;  // the grant's raft index (decision 0002)
  SessionId session;
  std::string session_name;  // the session's Name and Node at the grant
  std::string node;
  UnixMs granted_at;  // replicated time of the granting entry
  LogIndex grant_index;
  UnixMs ended_at;  // UnixMs() while held
  LogIndex end_index;
  EndCause end_cause = EndCause::kNone;

  bool held() const { return end_cause == EndCause::kNone; }
  bool operator==(const LockGrant&) const = default;
};

// A holder change as an apply made it, for the server's log (ApplyResult).
struct LockEvent {
  std::string key;
  LockGrant grant;     // as it is after the event
  bool ended = false;  // false: granted; true: ended with grant.end_cause
  bool operator==(const LockEvent&) const = default;
};

class LockHistory {
 public:
  // Bounds (docs/history.md). Both are part of the replicated semantics:
  // changing them changes which grants replicas keep, so they are constants.
  static constexpr std::size_t kGrantsPerKey = 32;
  static constexpr std::size_t kKeysMax = 10'000;

  struct KeyHistory {
    std::deque<LockGrant> grants;  // oldest first
    LogIndex modify_index;         // the last index that changed this key's history
    bool operator==(const KeyHistory&) const = default;
  };

  // Records a new grant of `key` at grant.grant_index.
  void Grant(const std::string& key, LockGrant grant);
  // Ends the open grant of `key` with `fence`, if the history still has it.
  // Returns the ended grant, or nullptr.
  const LockGrant* End(const std::string& key, LogIndex fence, EndCause cause, UnixMs at,
                       LogIndex index);
  // Changes the cause of an already ended grant (release -> handoff).
  void SetCause(const std::string& key, LogIndex fence, EndCause cause);

  const KeyHistory* Find(std::string_view key) const;
  std::size_t key_count() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }

  void Encode(ByteWriter& w) const;
  // Decodes what Encode wrote; fails `r` on malformed bytes.
  static LockHistory Decode(ByteReader& r);
  // The first broken invariant, or OK. `applied` bounds every index.
  Status Validate(LogIndex applied) const;

  bool operator==(const LockHistory& other) const { return keys_ == other.keys_; }

 private:
  KeyHistory& Touch(const std::string& key, LogIndex index);
  void EvictBeyondBound();

  std::map<std::string, KeyHistory, std::less<>> keys_;
  std::set<std::pair<LogIndex, std::string>> by_age_;  // (modify_index, key): eviction order
};

}  // namespace tenure::state
