#include "server/session_timers.h"

#include <algorithm>
#include <cstring>

#include "common/assert.h"
#include "common/limits.h"
#include "state/numbered_session.h"

namespace tenure::server {

namespace {

constexpr std::size_t kUuidLength = 36;

bool IsDash(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case too: its text would not order as its bytes
}

}  // namespace

// Every renewal parses its id (a ZooKeeper request renews its session), so
// a byte at a time, two digits a step, no branch on the digit's position.
std::optional<SessionTimers::Uuid> SessionTimers::ParseUuid(std::string_view id) {
  if (id.size() != kUuidLength || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-') {
    return std::nullopt;
  }
  Uuid uuid{};
  int bad = 0;
  std::size_t at = 0;
  for (std::uint8_t& byte : uuid) {
    if (IsDash(at)) ++at;
    const int high = HexValue(id[at]);
    const int low = HexValue(id[at + 1]);
    bad |= high | low;  // negative if either is not a digit
    byte = static_cast<std::uint8_t>(((high & 0xf) << 4) | (low & 0xf));
    at += 2;
  }
  if (bad < 0) return std::nullopt;
  return uuid;
}

std::string SessionTimers::FormatUuid(const Uuid& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(kUuidLength);
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    text.push_back(kHex[uuid[i] >> 4]);
    text.push_back(kHex[uuid[i] & 0xf]);
  }
  return text;
}

DurationMs SessionTimers::WaitMs(const state::SessionId& session_id, DurationMs ttl_ms) const {
  if (!state::IsNumberedSession(session_id)) return ttl_ms * ttl_multiplier_;
  constexpr DurationMs kPercent = 100;
  return ttl_ms + (ttl_ms * limits::kClockRateBoundPercent + kPercent - 1) / kPercent;
}

SessionTimers::SessionTimers(int ttl_multiplier, std::uint64_t hash_key)
    : ttl_multiplier_(ttl_multiplier), compact_(hash_key) {
  TENURE_ASSERT(ttl_multiplier_ >= 1);
}

void SessionTimers::Arm(const state::SessionId& session_id, DurationNs ttl_ns, MonoMs now_ms) {
  if (ttl_ns <= 0) return;
  DurationMs ttl_ms = (ttl_ns + kNsPerMs - 1) / kNsPerMs;
  MonoMs at_ms = now_ms + WaitMs(session_id, ttl_ms);
  if (std::optional<Uuid> uuid = ParseUuid(session_id.view())) {
    compact_.Set(*uuid, at_ms);
    return;
  }
  auto it = other_.find(session_id);
  if (it != other_.end()) {
    if (it->second == at_ms) return;  // renewed within the same millisecond
    other_queue_.erase({it->second, it->first.view()});
    it->second = at_ms;
  } else {
    it = other_.emplace(session_id, at_ms).first;
  }
  other_queue_.insert({at_ms, it->first.view()});
}

void SessionTimers::Disarm(const state::SessionId& session_id) {
  if (std::optional<Uuid> uuid = ParseUuid(session_id.view())) {
    compact_.Erase(*uuid);
    return;
  }
  auto it = other_.find(session_id);
  if (it == other_.end()) return;
  other_queue_.erase({it->second, it->first.view()});
  other_.erase(it);
}

void SessionTimers::Clear() {
  compact_.Clear();
  other_queue_.clear();
  other_.clear();
}

bool SessionTimers::armed(const state::SessionId& session_id) const {
  if (std::optional<Uuid> uuid = ParseUuid(session_id.view())) return compact_.Contains(*uuid);
  return other_.contains(session_id);
}

DurationMs SessionTimers::RemainingMs(const state::SessionId& session_id, MonoMs now_ms) const {
  if (std::optional<Uuid> uuid = ParseUuid(session_id.view())) {
    std::optional<MonoMs> at_ms = compact_.Find(*uuid);
    return at_ms ? *at_ms - now_ms : -1;
  }
  auto it = other_.find(session_id);
  if (it == other_.end()) return -1;
  return it->second - now_ms;
}

std::optional<MonoMs> SessionTimers::NextDeadline() const {
  std::optional<MonoMs> next;
  if (!compact_.empty()) next = compact_.top_at();
  if (!other_queue_.empty() && (!next || other_queue_.begin()->first < *next)) {
    next = other_queue_.begin()->first;
  }
  return next;
}

std::vector<state::SessionId> SessionTimers::TakeDue(MonoMs now_ms) {
  std::vector<state::SessionId> due;
  for (;;) {
    bool compact_due = !compact_.empty() && compact_.top_at() <= now_ms;
    bool other_due = !other_queue_.empty() && other_queue_.begin()->first <= now_ms;
    if (!compact_due && !other_due) break;
    bool take_compact = compact_due;
    std::string compact_text;
    if (compact_due) compact_text = FormatUuid(compact_.top_id());
    if (compact_due && other_due) {
      // Earliest first; equal deadlines by the id's text.
      MonoMs compact_at = compact_.top_at();
      MonoMs other_at = other_queue_.begin()->first;
      take_compact = compact_at != other_at
                         ? compact_at < other_at
                         : std::string_view(compact_text) < other_queue_.begin()->second;
    }
    if (take_compact) {
      compact_.PopTop();
      due.emplace_back(std::move(compact_text));
    } else {
      due.emplace_back(std::string(other_queue_.begin()->second));
      other_queue_.erase(other_queue_.begin());
      other_.erase(due.back());
    }
  }
  return due;
}

}  // namespace tenure::server
