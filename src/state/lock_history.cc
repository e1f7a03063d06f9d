// LockHistory: see lock_history.h. Encoding (docs/formats.md, snapshot v5):
//   history := n:varint (key:bytes modify_index:varint m:varint grant*m)*n
//   grant   := fence:varint session:bytes session_name:bytes node:bytes
//              granted_at:svarint grant_index:varint ended_at:svarint
//              end_index:varint end_cause:u8
#include "state/lock_history.h"

#include "common/assert.h"

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

LockHistory::KeyHistory& LockHistory::Touch(const std::string& key, LogIndex index) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    it = keys_.emplace(key, KeyHistory()).first;
  } else {
    by_age_.erase({it->second.modify_index, key});
  }
  it->second.modify_index = index;
  by_age_.insert({index, key});
  return it->second;
}

void LockHistory::EvictBeyondBound() {
  while (keys_.size() > kKeysMax) {
    auto oldest = by_age_.begin();
    keys_.erase(oldest->second);
    by_age_.erase(oldest);
  }
}

void LockHistory::Grant(const std::string& key, LockGrant grant) {
  KeyHistory& h = Touch(key, grant.grant_index);
  h.grants.push_back(std::move(grant));
  while (h.grants.size() > kGrantsPerKey) h.grants.pop_front();
  EvictBeyondBound();
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
    for (std::uint64_t m = count(); m > 0 && !r.failed(); --m) {
      LockGrant g;
      g.fence = r.GetIndex();
      g.session = SessionId(r.GetString());
      g.session_name = r.GetString();
      g.node = r.GetString();
      g.granted_at = UnixMs(r.GetSignedVarint());
      g.grant_index = r.GetIndex();
      g.ended_at = UnixMs(r.GetSignedVarint());
      g.end_index = r.GetIndex();
      const std::uint8_t cause = r.GetU8();
      if (cause > kEndCauseMax) r.Fail();
      g.end_cause = static_cast<EndCause>(cause);
      h.grants.push_back(std::move(g));
    }
    if (r.failed()) break;
    if (!out.by_age_.insert({h.modify_index, key}).second) r.Fail();
    if (!out.keys_.emplace(std::move(key), std::move(h)).second) r.Fail();
  }
  return out;
}

#define TENURE_INVARIANT(cond) \
  if (!(cond)) return Status::Corruption("lock history invariant broken: " #cond)

Status LockHistory::Validate(LogIndex applied) const {
  TENURE_INVARIANT(keys_.size() <= kKeysMax);
  TENURE_INVARIANT(by_age_.size() == keys_.size());
  for (const auto& [key, h] : keys_) {
    TENURE_INVARIANT(!h.grants.empty());
    TENURE_INVARIANT(h.grants.size() <= kGrantsPerKey);
    TENURE_INVARIANT(h.modify_index <= applied);
    TENURE_INVARIANT(by_age_.count({h.modify_index, key}) == 1);
    LogIndex previous;
    for (std::size_t i = 0; i < h.grants.size(); ++i) {
      const LockGrant& g = h.grants[i];
      TENURE_INVARIANT(!g.session.empty());
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
  return Status::Ok();
}

#undef TENURE_INVARIANT

}  // namespace tenure::state
