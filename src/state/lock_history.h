// LockHistory: per lock key, the last grants of the lock and how each ended
// (docs/history.md, docs/decisions/0025-election-history.md). Part of the
// replicated state: the Store records grants and ends in the same apply that
// changes a key's holder, with the command's leader-stamped time, so every
// replica holds the same history. Bounded three ways: kGrantsPerKey grants
// per key (oldest dropped), kKeysMax keys (the key whose history changed
// least recently is dropped, ties by key order) and kBytesMax counted bytes
// (Bytes(): the least recently changed key's oldest grants are dropped
// first); the copies of a holder's session name and node are cut to
// kNameBytesMax (CutName). Pure.
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
  UnixMs granted_at;  // the granting entry's wall clock (Command::wall_ms)
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

class TEST_StoreEditor;  // tests only (state/store.h)

class LockHistory {
 public:
  // Bounds (docs/history.md). All are part of the replicated semantics:
  // changing them changes which grants replicas keep, so they are constants.
  static constexpr std::size_t kGrantsPerKey = 32;
  static constexpr std::size_t kKeysMax = 10'000;
  // The session name and node a grant copies: longer ones are cut (CutName).
  static constexpr std::size_t kNameBytesMax = 128;
  // The whole history, counted as GrantBytes and KeyBytes sum (below). The
  // counted overheads are at least what Encode writes around the strings, so
  // the history's part of a snapshot is at most kBytesMax plus 10 bytes.
  static constexpr std::size_t kBytesMax = 8 * 1024 * 1024;
  static constexpr std::size_t kGrantOverheadBytes = 64;
  static constexpr std::size_t kKeyOverheadBytes = 64;

  // A name of at most kNameBytesMax bytes as it is; a longer one cut to its
  // first 125 bytes, or up to 3 fewer so as not to split a UTF-8 sequence
  // (the cut never falls before a continuation byte 10xxxxxx within those 3),
  // followed by kCutMark: at most kNameBytesMax bytes. Idempotent.
  static std::string CutName(std::string_view name);
  static constexpr std::string_view kCutMark = "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS

  // The counted size: platform- and allocator-independent, from lengths only.
  static std::size_t GrantBytes(const LockGrant& g) {
    return kGrantOverheadBytes + g.session.view().size() + g.session_name.size() + g.node.size();
  }
  static std::size_t KeyBytes(std::string_view key) { return kKeyOverheadBytes + key.size(); }

  struct KeyHistory {
    std::deque<LockGrant> grants;  // oldest first
    LogIndex modify_index;         // the last index that changed this key's history
    bool operator==(const KeyHistory&) const = default;
  };

  // Records a new grant of `key` at grant.grant_index, its names cut
  // (CutName), then applies the bounds. Returns the recorded grant (never
  // bounded out: it is the newest of the most recently changed key).
  const LockGrant& Grant(const std::string& key, LockGrant grant);
  // Ends the open grant of `key` with `fence`, if the history still has it.
  // Returns the ended grant, or nullptr.
  const LockGrant* End(const std::string& key, LogIndex fence, EndCause cause, UnixMs at,
                       LogIndex index);
  // Changes the cause of an already ended grant (release -> handoff).
  void SetCause(const std::string& key, LogIndex fence, EndCause cause);

  const KeyHistory* Find(std::string_view key) const;
  // Calls fn(key, history) for every key starting with `prefix`, in key order.
  template <typename Fn>
  void ForEachUnder(std::string_view prefix, Fn fn) const {
    for (auto it = keys_.lower_bound(prefix);
         it != keys_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
      fn(it->first, it->second);
    }
  }
  std::size_t key_count() const { return keys_.size(); }
  // The sum of KeyBytes and GrantBytes over every key and grant kept.
  std::size_t bytes() const { return bytes_; }
  bool empty() const { return keys_.empty(); }

  void Encode(ByteWriter& w) const;
  // Decodes what Encode wrote; fails `r` on malformed bytes. A history an
  // older build wrote with longer names or over kBytesMax is brought within
  // the bounds as Grant would (names cut, then the byte bound applied), the
  // same on every replica: it is a function of the bytes.
  static LockHistory Decode(ByteReader& r);
  // The first broken invariant, or OK. `applied` bounds every index.
  Status Validate(LogIndex applied) const;
  // Every grant's times in the years 1970 to 9999 (leaders' wall clocks,
  // which may go back from one leader to the next, so not ordered); keys
  // within limits::kKvKeyBytesMax. kInvalidArgument naming the grant.
  Status CheckTimes() const;

  bool operator==(const LockHistory& other) const { return keys_ == other.keys_; }

 private:
  friend class TEST_StoreEditor;
  KeyHistory& Touch(const std::string& key, LogIndex index);
  void EvictBeyondBound();
  void DropOldestGrant(KeyHistory& h);

  std::map<std::string, KeyHistory, std::less<>> keys_;
  std::set<std::pair<LogIndex, std::string>> by_age_;  // (modify_index, key): eviction order
  std::size_t bytes_ = 0;                              // bytes(); derived, not encoded
};

}  // namespace tenure::state
