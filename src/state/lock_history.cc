// LockHistory: see lock_history.h. Encoding (docs/formats.md, snapshot v5):
//   history := n:varint (key:bytes modify_index:varint m:varint grant*m)*n
//   grant   := fence:varint session:bytes session_name:bytes node:bytes
//              granted_at:svarint grant_index:varint ended_at:svarint
//              end_index:varint end_cause:u8
// Unchanged by the byte bound: bytes() is derived from the records on decode.
#include "state/lock_history.h"

#include "common/assert.h"
#include "state/field_limits.h"

namespace tenure::state {

std::string_view EndCauseName(EndCause cause) {
  switch (cause) {
    case EndCause::kNone:
      return "";
    case EndCause::kRelease:
      return "release";
    case EndCause::kDestroy:
      return "destroy";
    case EndCause::kTtlExpiry:
      return "ttl-expiry";
    case EndCause::kHandoff:
      return "handoff";
    case EndCause::kDelete:
      return "delete";
    case EndCause::kLockDelay:
      return "lock-delay";
  }
  return "";
}

std::string LockHistory::CutName(std::string_view name) {
  if (name.size() <= kNameBytesMax) return std::string(name);
  constexpr std::size_t kKeep = kNameBytesMax - kCutMark.size();  // 125
  std::size_t cut = kKeep;
  // name[cut] is the first byte dropped: while it continues a UTF-8
  // sequence, step back (a sequence has at most 3 continuation bytes).
  while (cut > kKeep - 3 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  std::string out(name.substr(0, cut));
  out += kCutMark;
  return out;
}

LockHistory::KeyHistory& LockHistory::Touch(const std::string& key, LogIndex index) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    it = keys_.emplace(key, KeyHistory()).first;
    bytes_ += KeyBytes(key);
  } else {
    by_age_.erase({it->second.modify_index, key});
  }
  it->second.modify_index = index;
  by_age_.insert({index, key});
  return it->second;
}

void LockHistory::DropOldestGrant(KeyHistory& h) {
  bytes_ -= GrantBytes(h.grants.front());
  h.grants.pop_front();
}

// Count first, then bytes: the least recently changed key (ties: key order)
// loses its oldest grants one by one, and goes when it has none left. The
// key just changed is the newest, and one key (kGrantsPerKey grants of
// names cut to kNameBytesMax, a key of at most 4 KiB) counts far less than
// kBytesMax, so the grant just recorded stays; the last grant of the last
// key is never dropped, even for keys and session IDs no server accepts
// (a raft command, at most 1 MiB, cannot carry one that counts 8 MiB).
void LockHistory::EvictBeyondBound() {
  while (keys_.size() > kKeysMax || bytes_ > kBytesMax) {
    auto oldest = by_age_.begin();
    auto it = keys_.find(oldest->second);
    TENURE_ASSERT(it != keys_.end());
    TENURE_ASSERT(!it->second.grants.empty());
    if (keys_.size() <= kKeysMax) {
      if (keys_.size() == 1 && it->second.grants.size() == 1) break;
      DropOldestGrant(it->second);
      if (!it->second.grants.empty()) continue;
    } else {
      while (!it->second.grants.empty()) DropOldestGrant(it->second);
    }
    bytes_ -= KeyBytes(it->first);
    keys_.erase(it);
    by_age_.erase(oldest);
  }
}

const LockGrant& LockHistory::Grant(const std::string& key, LockGrant grant) {
  grant.session_name = CutName(grant.session_name);
  grant.node = CutName(grant.node);
  bytes_ += GrantBytes(grant);
  KeyHistory& h = Touch(key, grant.grant_index);
  h.grants.push_back(std::move(grant));
  while (h.grants.size() > kGrantsPerKey) DropOldestGrant(h);
  EvictBeyondBound();
  return keys_.find(key)->second.grants.back();
}

const LockGrant* LockHistory::End(const std::string& key, LogIndex fence, EndCause cause, UnixMs at,
                                  LogIndex index) {
  auto it = keys_.find(key);
  if (it == keys_.end() || it->second.grants.empty()) return nullptr;
  LockGrant& last = it->second.grants.back();
  if (last.fence != fence || !last.held()) return nullptr;
  last.ended_at = at;
  last.end_index = index;
  last.end_cause = cause;
  Touch(key, index);
  return &it->second.grants.back();
}

void LockHistory::SetCause(const std::string& key, LogIndex fence, EndCause cause) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  for (LockGrant& g : it->second.grants) {
    if (g.fence == fence && !g.held()) g.end_cause = cause;
  }
}

const LockHistory::KeyHistory* LockHistory::Find(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

void LockHistory::Encode(ByteWriter& w) const {
  w.PutVarint(keys_.size());
  for (const auto& [key, h] : keys_) {
    w.PutBytes(key);
    w.PutIndex(h.modify_index);
    w.PutVarint(h.grants.size());
    for (const LockGrant& g : h.grants) {
      w.PutIndex(g.fence);
      w.PutBytes(g.session.view());
      w.PutBytes(g.session_name);
      w.PutBytes(g.node);
      w.PutSignedVarint(g.granted_at.ms());
      w.PutIndex(g.grant_index);
      w.PutSignedVarint(g.ended_at.ms());
      w.PutIndex(g.end_index);
      w.PutU8(static_cast<std::uint8_t>(g.end_cause));
    }
  }
}

LockHistory LockHistory::Decode(ByteReader& r) {
  LockHistory out;
  auto count = [&r]() {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every element takes at least one byte
    return r.failed() ? 0 : n;
  };
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    std::string key = r.GetString();
    KeyHistory h;
    h.modify_index = r.GetIndex();
    std::uint64_t m = count();
    if (m == 0) r.Fail();  // a key is kept only with a grant
    for (; m > 0 && !r.failed(); --m) {
      LockGrant g;
      g.fence = r.GetIndex();
      g.session = SessionId(r.GetString());
      g.session_name = CutName(r.GetString());  // an older build kept them whole
      g.node = CutName(r.GetString());
      g.granted_at = UnixMs(r.GetSignedVarint());
      g.grant_index = r.GetIndex();
      g.ended_at = UnixMs(r.GetSignedVarint());
      g.end_index = r.GetIndex();
      const std::uint8_t cause = r.GetU8();
      if (cause > kEndCauseMax) r.Fail();
      g.end_cause = static_cast<EndCause>(cause);
      out.bytes_ += GrantBytes(g);
      h.grants.push_back(std::move(g));
    }
    if (r.failed()) break;
    out.bytes_ += KeyBytes(key);
    if (!out.by_age_.insert({h.modify_index, key}).second) r.Fail();
    if (!out.keys_.emplace(std::move(key), std::move(h)).second) r.Fail();
  }
  // An older build bounded only the counts: trim its history as an apply
  // would (docs/history.md). Over kKeysMax no build wrote: Validate refuses.
  if (!r.failed() && out.keys_.size() <= kKeysMax) out.EvictBeyondBound();
  return out;
}

#define TENURE_INVARIANT(cond) \
  if (!(cond)) return Status::Corruption("lock history invariant broken: " #cond)

Status LockHistory::Validate(LogIndex applied) const {
  TENURE_INVARIANT(keys_.size() <= kKeysMax);
  TENURE_INVARIANT(by_age_.size() == keys_.size());
  TENURE_INVARIANT(bytes_ <= kBytesMax);
  std::size_t bytes = 0;
  for (const auto& [key, h] : keys_) {
    bytes += KeyBytes(key);
    TENURE_INVARIANT(!h.grants.empty());
    TENURE_INVARIANT(h.grants.size() <= kGrantsPerKey);
    TENURE_INVARIANT(h.modify_index <= applied);
    TENURE_INVARIANT(by_age_.count({h.modify_index, key}) == 1);
    LogIndex previous;
    for (std::size_t i = 0; i < h.grants.size(); ++i) {
      const LockGrant& g = h.grants[i];
      bytes += GrantBytes(g);
      TENURE_INVARIANT(!g.session.empty());
      TENURE_INVARIANT(g.session_name.size() <= kNameBytesMax);
      TENURE_INVARIANT(g.node.size() <= kNameBytesMax);
      TENURE_INVARIANT(g.fence == g.grant_index);
      TENURE_INVARIANT(g.fence > previous);  // strictly increasing tokens
      TENURE_INVARIANT(g.grant_index <= h.modify_index);
      TENURE_INVARIANT(g.end_cause != EndCause::kLockDelay);
      if (i + 1 < h.grants.size()) TENURE_INVARIANT(!g.held());  // one holder at a time
      if (g.held()) {
        TENURE_INVARIANT(g.end_index.is_none());
      } else {
        TENURE_INVARIANT(g.end_index >= g.grant_index && g.end_index <= h.modify_index);
        if (i + 1 < h.grants.size()) TENURE_INVARIANT(g.end_index <= h.grants[i + 1].grant_index);
      }
      previous = g.fence;
    }
  }
  TENURE_INVARIANT(bytes == bytes_);
  return Status::Ok();
}

#undef TENURE_INVARIANT

Status LockHistory::CheckTimes() const {
  for (const auto& [key, h] : keys_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("history of key", key));
    for (const LockGrant& g : h.grants) {
      const std::string what = "history of key " + QuoteCut(key) + ": the grant at index " +
                               std::to_string(g.grant_index.value());
      TENURE_RETURN_IF_ERROR(CheckUnixMs(what + " was granted at", g.granted_at));
      if (!g.held()) TENURE_RETURN_IF_ERROR(CheckUnixMs(what + " ended at", g.ended_at));
    }
  }
  return Status::Ok();
}

}  // namespace tenure::state
