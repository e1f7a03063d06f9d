#include "raft/wire/message_gate.h"

#include <fmt/core.h>

#include <set>
#include <string>

#include "common/coding.h"
#include "common/limits.h"
#include "raft/entry_codec.h"
#include "raft/raft_c.h"  // message and entry types: the wire carries them as they are
#include "state/store.h"

namespace tenure::raft::wire {
namespace {

constexpr std::size_t kPreambleBytes = 16;
constexpr std::uint64_t kAppendEntriesFixed = 48;  // + 16 per entry
constexpr std::uint64_t kEntryHeaderBytes = 16;
constexpr std::uint64_t kInstallSnapshotFixed = 56;  // + conf_len
constexpr std::uint64_t kFixedResultBytes = 24;
constexpr std::uint64_t kRequestVoteBytes = 40;
constexpr std::uint64_t kBarrierBytes = 8;
constexpr std::uint64_t kConfigurationServersMax = 1024;
constexpr std::size_t kAddressBytesMax = 1024;

std::uint64_t U64At(std::string_view bytes, std::size_t offset) {
  ByteReader reader(bytes.substr(offset, 8));
  return reader.GetFixed64();
}

std::string_view TypeName(std::uint64_t type) {
  switch (type) {
    case RAFT_IO_APPEND_ENTRIES:
      return "AppendEntries";
    case RAFT_IO_APPEND_ENTRIES_RESULT:
      return "AppendEntriesResult";
    case RAFT_IO_REQUEST_VOTE:
      return "RequestVote";
    case RAFT_IO_REQUEST_VOTE_RESULT:
      return "RequestVoteResult";
    case RAFT_IO_INSTALL_SNAPSHOT:
      return "InstallSnapshot";
    case RAFT_IO_TIMEOUT_NOW:
      return "TimeoutNow";
  }
  return "unknown";
}

Status Bad(std::string message) { return Status::InvalidArgument("raft message: " + message); }

}  // namespace

GateLimits DefaultGateLimits(DurationMs election_timeout_ms) {
  GateLimits limits;
  limits.append_entries_max = limits::kRaftAppendEntriesMax;
  limits.entry_bytes_max = limits::kRaftEntryBytesMax;
  limits.append_bytes_max = limits::kRaftAppendBytesMax;
  limits.snapshot_bytes_max = limits::kRaftSnapshotBytesMax;
  limits.configuration_bytes_max = limits::kRaftConfigurationBytesMax;
  limits.vote_window_ms = election_timeout_ms;
  limits.votes_per_window = limits::kRaftVotesPerElectionTimeoutMax;
  limits.disrupt_votes_per_window = limits::kRaftDisruptVotesPerElectionTimeoutMax;
  limits.message_time_ms = limits::kRaftMessageTimeMs;
  limits.message_bytes_per_s_min = limits::kRaftMessageBytesPerSecondMin;
  limits.inbound_bytes_max = limits::kRaftInboundBytesMax;
  return limits;
}

bool InboundLedger::AllowVote(std::uint64_t peer, bool disrupt, MonoMs now_ms) {
  if (votes_.size() > kConfigurationServersMax && votes_.count(peer) == 0) {
    // Ids come from the configuration; a joining server admits any. Forget
    // windows that have run out before keeping a new one.
    for (auto it = votes_.begin(); it != votes_.end();) {
      it = now_ms - it->second.start_ms >= limits_.vote_window_ms ? votes_.erase(it) : ++it;
    }
  }
  auto [it, fresh] = votes_.try_emplace(peer);
  VoteWindow& window = it->second;
  if (fresh || now_ms - window.start_ms >= limits_.vote_window_ms) window = {now_ms, 0, 0};
  if (window.votes >= limits_.votes_per_window ||
      (disrupt && window.disrupt >= limits_.disrupt_votes_per_window)) {
    return false;
  }
  ++window.votes;
  if (disrupt) ++window.disrupt;
  return true;
}

bool InboundLedger::Take(std::uint64_t bytes) {
  if (bytes > limits_.inbound_bytes_max - in_progress_bytes_) return false;
  in_progress_bytes_ += bytes;
  return true;
}

void InboundLedger::Give(std::uint64_t bytes) {
  in_progress_bytes_ -= std::min(bytes, in_progress_bytes_);
}

Status CheckConfiguration(std::string_view conf) {
  if (conf.empty() || conf.size() % 8 != 0) {
    return Bad("configuration of " + std::to_string(conf.size()) +
               " bytes is not a non-empty multiple of 8");
  }
  ByteReader reader(conf);
  if (reader.GetU8() != 1) return Bad("configuration: unknown encoding version");
  std::uint64_t n = reader.GetFixed64();
  if (reader.failed() || n == 0 || n > kConfigurationServersMax) {
    return Bad("configuration: " + std::to_string(n) + " servers");
  }
  std::set<std::uint64_t> ids;
  std::set<std::string_view> addresses;
  std::string_view rest = conf.substr(9);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (rest.size() < 8) return Bad("configuration: truncated");
    std::uint64_t id = U64At(rest, 0);
    rest.remove_prefix(8);
    std::size_t end = rest.find('\0');
    if (end == std::string_view::npos || end == 0 || end > kAddressBytesMax) {
      return Bad("configuration: bad address of server " + std::to_string(id));
    }
    std::string_view address = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    if (rest.empty()) return Bad("configuration: truncated");
    auto role = static_cast<std::uint8_t>(rest[0]);
    rest.remove_prefix(1);
    if (id == 0 || role > 2) return Bad("configuration: bad server id or role");
    if (!ids.insert(id).second || !addresses.insert(address).second) {
      return Bad("configuration: server " + std::to_string(id) + " or its address twice");
    }
  }
  // The padding's content is not checked: libraft 0.15 leaves it
  // uninitialized (configurationEncode mallocs and writes up to the role).
  if (rest.size() >= 8) return Bad("configuration: trailing bytes");
  return Status();
}

MessageGate::MessageGate(std::uint64_t peer_id, GateLimits limits,
                         std::shared_ptr<InboundLedger> ledger)
    : peer_id_(peer_id),
      limits_(limits),
      ledger_(ledger ? std::move(ledger) : std::make_shared<InboundLedger>(limits)) {}

MessageGate::~MessageGate() { ledger_->Give(message_bytes_); }

MonoMs MessageGate::deadline_ms() const {
  const std::uint64_t rate = std::max<std::uint64_t>(1, limits_.message_bytes_per_s_min);
  // Declared sizes are bounded (at most a header and a snapshot), so this
  // neither overflows nor passes MonoMs's range.
  return message_start_ms_ + limits_.message_time_ms +
         static_cast<DurationMs>(declared_bytes_ * 1000 / rate);
}

Status MessageGate::Count(std::size_t bytes) {
  if (!ledger_->Take(bytes)) {
    return Bad(fmt::format(
        "{} bytes more of a {} would pass the {} bytes of raft messages in progress that all "
        "connections together may hold ({} held now)",
        bytes, TypeName(type_), limits_.inbound_bytes_max, ledger_->in_progress_bytes()));
  }
  message_bytes_ += bytes;
  return Status();
}

Status MessageGate::Feed(std::string_view input, MonoMs now_ms, std::string* forward) {
  // What a caller handed in with *forward stays where it is; only bytes this
  // call appended may be moved in front of a large entry (kEntry).
  const bool forward_was_empty = forward->empty();
  if (mid_message() && now_ms > deadline_ms()) {
    return Bad(fmt::format(
        "a {} of {} bytes (as declared so far) was not whole {} ms after its first byte "
        "({} received; the limit is {} ms plus its size at {} bytes/s)",
        TypeName(type_), declared_bytes_, now_ms - message_start_ms_, message_bytes_,
        limits_.message_time_ms, limits_.message_bytes_per_s_min));
  }
  while (!input.empty()) {
    switch (phase_) {
      case Phase::kPreamble: {
        if (pending_.empty()) {
          message_start_ms_ = now_ms;
          declared_bytes_ = kPreambleBytes;
          type_ = 0;
        }
        std::size_t take = std::min(input.size(), kPreambleBytes - pending_.size());
        TENURE_RETURN_IF_ERROR(Count(take));
        pending_.append(input.substr(0, take));
        input.remove_prefix(take);
        if (pending_.size() < kPreambleBytes) break;
        type_ = U64At(pending_, 0);
        length_ = U64At(pending_, 8);
        switch (type_) {
          case RAFT_IO_APPEND_ENTRIES:
            if (length_ < kAppendEntriesFixed ||
                length_ > kAppendEntriesFixed + kEntryHeaderBytes * limits_.append_entries_max ||
                (length_ - kAppendEntriesFixed) % kEntryHeaderBytes != 0) {
              return Bad("AppendEntries header of " + std::to_string(length_) + " bytes");
            }
            break;
          case RAFT_IO_INSTALL_SNAPSHOT:
            if (length_ < kInstallSnapshotFixed + 8 ||
                length_ > kInstallSnapshotFixed + limits_.configuration_bytes_max) {
              return Bad("InstallSnapshot header of " + std::to_string(length_) + " bytes");
            }
            break;
          case RAFT_IO_REQUEST_VOTE:
            if (length_ != kRequestVoteBytes) {
              return Bad("RequestVote header of " + std::to_string(length_) + " bytes");
            }
            break;
          case RAFT_IO_APPEND_ENTRIES_RESULT:
          case RAFT_IO_REQUEST_VOTE_RESULT:
          case RAFT_IO_TIMEOUT_NOW:
            if (length_ != kFixedResultBytes) {
              return Bad(std::string(TypeName(type_)) + " header of " + std::to_string(length_) +
                         " bytes");
            }
            break;
          default:
            return Bad("unknown type " + std::to_string(type_));
        }
        header_ = std::move(pending_);
        pending_.clear();
        declared_bytes_ = kPreambleBytes + length_;
        phase_ = Phase::kHeader;
        break;
      }
      case Phase::kHeader: {
        std::size_t want = kPreambleBytes + length_ - header_.size();
        std::size_t take = std::min<std::size_t>(input.size(), want);
        TENURE_RETURN_IF_ERROR(Count(take));
        header_.append(input.substr(0, take));
        input.remove_prefix(take);
        if (header_.size() < kPreambleBytes + length_) break;
        bool drop = false;
        TENURE_RETURN_IF_ERROR(CheckHeader(now_ms, &drop));
        if (type_ == RAFT_IO_APPEND_ENTRIES && entries_ > 0) {
          forward->append(header_);
          phase_ = Phase::kEntry;
        } else if (type_ == RAFT_IO_INSTALL_SNAPSHOT) {
          phase_ = Phase::kSnapshot;  // held, with its data, until the data is checked
        } else {
          if (!drop) forward->append(header_);
          FinishMessage();
        }
        break;
      }
      case Phase::kEntry: {
        std::size_t offset = kPreambleBytes + 40 + kEntryHeaderBytes * next_entry_;
        std::uint32_t size = static_cast<std::uint32_t>(U64At(header_, offset + 8) >>
                                                        32);  // bytes 12..15 of the entry header
        if (pending_.empty()) {
          // The size is declared and bounded: one allocation. A large entry
          // (a restore carries a whole state) takes the bytes not yet
          // forwarded in front of it, so it is forwarded by a swap, never
          // copied again on the loop thread.
          // (Only a small prefix: the entry before it, large too, is
          // appended as before, not copied in front of this one.)
          entry_prefix_ =
              size > kSwapEntryBytes && forward_was_empty && forward->size() <= kSwapEntryBytes
                  ? forward->size()
                  : 0;
          pending_.reserve(entry_prefix_ + size);
          if (entry_prefix_ > 0) {
            pending_.append(*forward);
            forward->clear();
          }
        }
        std::size_t have = pending_.size() - entry_prefix_;
        std::size_t take = std::min<std::size_t>(input.size(), size - have);
        TENURE_RETURN_IF_ERROR(Count(take));
        pending_.append(input.substr(0, take));
        input.remove_prefix(take);
        if (pending_.size() - entry_prefix_ < size) break;
        const std::string_view entry = std::string_view(pending_).substr(entry_prefix_);
        auto type = static_cast<std::uint8_t>(header_[offset + 8]);
        if (type == RAFT_COMMAND) {
          TENURE_RETURN_IF_ERROR(CheckEntry(entry));
        } else if (type == RAFT_CHANGE) {
          TENURE_RETURN_IF_ERROR(CheckConfiguration(entry));
        }
        if (forward->empty()) {
          forward->swap(pending_);
        } else {
          forward->append(pending_);
        }
        pending_.clear();
        entry_prefix_ = 0;
        if (++next_entry_ == entries_) FinishMessage();
        break;
      }
      case Phase::kSnapshot: {
        std::size_t take = std::min<std::size_t>(input.size(), snapshot_left_);
        TENURE_RETURN_IF_ERROR(Count(take));
        header_.append(input.substr(0, take));
        input.remove_prefix(take);
        snapshot_left_ -= take;
        if (snapshot_left_ > 0) break;
        TENURE_RETURN_IF_ERROR(
            CheckSnapshotData(std::string_view(header_).substr(kPreambleBytes + length_)));
        if (forward->empty()) {
          forward->swap(header_);  // a snapshot can be large: no copy
        } else {
          forward->append(header_);
        }
        FinishMessage();
        break;
      }
    }
  }
  return Status();
}

void MessageGate::FinishMessage() {
  ++messages_;
  phase_ = Phase::kPreamble;
  header_.clear();
  if (header_.capacity() > 64 * 1024) std::string().swap(header_);
  if (pending_.capacity() > 64 * 1024) std::string().swap(pending_);
  entries_ = next_entry_ = 0;
  snapshot_left_ = 0;
  ledger_->Give(message_bytes_);
  message_bytes_ = 0;
  declared_bytes_ = 0;
}

Status MessageGate::CheckHeader(MonoMs now_ms, bool* drop) {
  switch (type_) {
    case RAFT_IO_APPEND_ENTRIES:
      return CheckAppendEntries();
    case RAFT_IO_INSTALL_SNAPSHOT:
      return CheckInstallSnapshot();
    case RAFT_IO_REQUEST_VOTE:
      return CheckRequestVote(now_ms, drop);
    default:
      return Status();  // fixed-size answers: nothing but their length to check
  }
}

Status MessageGate::CheckAppendEntries() {
  std::string_view header = std::string_view(header_).substr(kPreambleBytes);
  std::uint64_t n = U64At(header, 32);
  if (n != (length_ - kAppendEntriesFixed) / kEntryHeaderBytes) {
    return Bad("AppendEntries declares " + std::to_string(n) + " entries in a header for " +
               std::to_string((length_ - kAppendEntriesFixed) / kEntryHeaderBytes));
  }
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string_view entry = header.substr(40 + kEntryHeaderBytes * i, kEntryHeaderBytes);
    auto type = static_cast<std::uint8_t>(entry[8]);
    std::uint64_t size = U64At(entry, 8) >> 32;
    if (type != RAFT_COMMAND && type != RAFT_BARRIER && type != RAFT_CHANGE) {
      return Bad("entry " + std::to_string(i) + " of type " + std::to_string(type));
    }
    if (size == 0 || size % 8 != 0 || size > limits_.entry_bytes_max) {
      return Bad("entry " + std::to_string(i) + " of " + std::to_string(size) + " bytes");
    }
    if (type == RAFT_BARRIER && size != kBarrierBytes) {
      return Bad("barrier entry of " + std::to_string(size) + " bytes");
    }
    if (type == RAFT_CHANGE && size > limits_.configuration_bytes_max) {
      return Bad("configuration entry of " + std::to_string(size) + " bytes");
    }
    total += size;
  }
  if (total > limits_.append_bytes_max) {
    return Bad("AppendEntries payload of " + std::to_string(total) + " bytes (limit " +
               std::to_string(limits_.append_bytes_max) + ")");
  }
  entries_ = n;
  next_entry_ = 0;
  declared_bytes_ += total;
  return Status();
}

Status MessageGate::CheckInstallSnapshot() {
  std::string_view header = std::string_view(header_).substr(kPreambleBytes);
  std::uint64_t conf_len = U64At(header, 32);
  if (conf_len != length_ - kInstallSnapshotFixed) {
    return Bad("InstallSnapshot configuration of " + std::to_string(conf_len) +
               " bytes in a header for " + std::to_string(length_ - kInstallSnapshotFixed));
  }
  TENURE_RETURN_IF_ERROR(CheckConfiguration(header.substr(40, conf_len)));
  // What libraft's leader sends: its term, the snapshot's last index and
  // term, and the index of the configuration it holds (at or before it).
  const std::uint64_t term = U64At(header, 0);
  const std::uint64_t last_index = U64At(header, 8);
  const std::uint64_t last_term = U64At(header, 16);
  const std::uint64_t conf_index = U64At(header, 24);
  if (last_index == 0 || last_term == 0 || last_term > term || conf_index == 0 ||
      conf_index > last_index) {
    return Bad(fmt::format(
        "InstallSnapshot of term {} with last index {}, last term {} and configuration index {}",
        term, last_index, last_term, conf_index));
  }
  std::uint64_t data_len = U64At(header, 40 + conf_len);
  if (data_len == 0 || data_len > limits_.snapshot_bytes_max) {
    return Bad("InstallSnapshot of " + std::to_string(data_len) + " bytes (limit " +
               std::to_string(limits_.snapshot_bytes_max) + ")");
  }
  snapshot_left_ = data_len;
  declared_bytes_ += data_len;
  return Status();
}

// The whole state, as the leader's FsmBridge::Snapshot encoded it: anything
// the state machine would refuse to restore never reaches libraft.
Status MessageGate::CheckSnapshotData(std::string_view data) const {
  Result<state::Store> store = state::Store::DecodeSnapshot(data);
  if (!store.ok()) {
    return Bad("InstallSnapshot data of " + std::to_string(data.size()) +
               " bytes is not a valid tenure snapshot: " + std::string(store.status().message()));
  }
  return Status();
}

Status MessageGate::CheckRequestVote(MonoMs now_ms, bool* drop) {
  std::string_view header = std::string_view(header_).substr(kPreambleBytes);
  std::uint64_t candidate = U64At(header, 8);
  if (candidate != peer_id_) {
    return Bad("RequestVote for candidate " + std::to_string(candidate) + " from server " +
               std::to_string(peer_id_));
  }
  bool disrupt = (U64At(header, 32) & 1) != 0;
  if (!ledger_->AllowVote(peer_id_, disrupt, now_ms)) {
    *drop = true;  // as a lossy network would; the candidate retries
    ++votes_dropped_;
  }
  return Status();
}

Status MessageGate::CheckEntry(std::string_view data) {
  // A restore carries a whole state: checked without copying it.
  if (Result<std::string_view> payload = UnframeEntry(data);
      payload.ok() && state::LooksLikeRestore(*payload)) {
    std::string_view snapshot;
    Result<state::Command> command = state::DecodeRestoreCommand(*payload, &snapshot);
    if (!command.ok()) return Bad("command entry: " + std::string(command.status().message()));
    return Status();
  }
  Result<state::Command> command = DecodeEntry(data);
  if (!command.ok()) return Bad("command entry: " + std::string(command.status().message()));
  return Status();
}

}  // namespace tenure::raft::wire
