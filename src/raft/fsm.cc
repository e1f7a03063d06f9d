#include "raft/fsm.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "common/log.h"
#include "raft/entry_codec.h"

namespace tenure::raft {

struct raft_buffer CopyToRaftBuffer(std::string_view bytes) {
  struct raft_buffer buf;
  buf.len = bytes.size();
  buf.base = raft_malloc(bytes.empty() ? 1 : bytes.size());
  if (buf.base != nullptr && !bytes.empty()) std::memcpy(buf.base, bytes.data(), bytes.size());
  return buf;
}

struct raft_buffer EncodeToRaftBuffer(const state::Command& command) {
  const auto* restore = std::get_if<state::RestoreState>(&command.body);
  if (restore == nullptr) {
    std::string framed;
    EncodeEntry(command, &framed);
    return CopyToRaftBuffer(framed);
  }
  std::string head;
  std::string tail;
  state::EncodeRestoreAround(command, &head, &tail);
  const std::size_t payload = head.size() + restore->snapshot.size() + tail.size();
  struct raft_buffer buf;
  buf.len = FramedEntrySize(payload);
  buf.base = raft_malloc(buf.len);
  if (buf.base == nullptr) return buf;
  auto* at = static_cast<char*>(buf.base);
  for (std::size_t i = 0; i < kEntryHeaderBytes; ++i) {
    at[i] = static_cast<char>((payload >> (8 * i)) & 0xff);  // fixed32, little-endian
  }
  at += kEntryHeaderBytes;
  std::memcpy(at, head.data(), head.size());
  at += head.size();
  std::memcpy(at, restore->snapshot.data(), restore->snapshot.size());
  at += restore->snapshot.size();
  std::memcpy(at, tail.data(), tail.size());
  at += tail.size();
  std::memset(at, 0, buf.len - kEntryHeaderBytes - payload);
  return buf;
}

std::string RaftStateName(const struct raft& r) {
  switch (r.state) {
    case RAFT_LEADER:
      return "Leader";
    case RAFT_CANDIDATE:
      return "Candidate";
    case RAFT_FOLLOWER:
      return "Follower";
    default:
      return "Unavailable";
  }
}

// Every leadership transition of every lock, once per member: each replica
// logs what it applies (docs/logs.md, "Lock transitions"), so any one
// server's log has the whole sequence, with or without a leader change.
static void LogLockEvents(const std::vector<state::LockEvent>& events) {
  if (events.empty() || !log::Enabled(log::Level::kInfo)) return;
  for (const state::LockEvent& e : events) {
    const state::LockGrant& g = e.grant;
    if (!e.ended) {
      log::Info("lock",
                fmt::format("lock {} granted to session {} ({}) on node {}, fence {}", e.key,
                            g.session.str(), g.session_name, g.node, g.fence.value()),
                {{"key", e.key},
                 {"event", "granted"},
                 {"session", g.session.str()},
                 {"session_name", g.session_name},
                 {"node", g.node},
                 log::Num("fence", g.fence.value()),
                 log::Num("index", g.grant_index.value())});
    } else {
      const std::string_view cause = state::EndCauseName(g.end_cause);
      log::Info("lock",
                fmt::format("lock {} ended for session {} ({}) on node {}, fence {}: {}", e.key,
                            g.session.str(), g.session_name, g.node, g.fence.value(), cause),
                {{"key", e.key},
                 {"event", "ended"},
                 {"session", g.session.str()},
                 {"session_name", g.session_name},
                 {"node", g.node},
                 log::Num("fence", g.fence.value()),
                 log::Num("index", g.end_index.value()),
                 {"cause", std::string(cause)}});
    }
  }
}

FsmBridge::FsmBridge(state::Store* store) : store_(store) {
  fsm_.version = 3;
  fsm_.data = this;
  fsm_.apply = &FsmBridge::Apply;
  fsm_.snapshot = &FsmBridge::Snapshot;
  fsm_.restore = &FsmBridge::Restore;
  fsm_.snapshot_finalize = &FsmBridge::SnapshotFinalize;
  fsm_.snapshot_async = nullptr;  // set_snapshot_in_child(true) sets it
}

state::ApplyResult FsmBridge::TakeResult(void* result) {
  auto* slot = static_cast<std::optional<state::ApplyResult>*>(result);
  TENURE_ASSERT(slot != nullptr);
  TENURE_ASSERT(slot->has_value());
  state::ApplyResult taken = std::move(**slot);
  slot->reset();
  return taken;
}

int FsmBridge::Apply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result) noexcept {
  auto* self = static_cast<FsmBridge*>(fsm->data);
  TENURE_ASSERT(self->raft_ != nullptr);
  *result = nullptr;
  std::chrono::steady_clock::time_point start;
  if (self->apply_histogram_ != nullptr) start = std::chrono::steady_clock::now();
  LogIndex index = self->NextIndex();  // libraft does not pass it
  std::string_view bytes(static_cast<const char*>(buf->base), buf->len);
  if (std::optional<state::ApplyResult>* slot = self->ApplyDecodedRestore(bytes, index)) {
    *result = slot;
    if (self->apply_histogram_ != nullptr) self->apply_histogram_->ObserveSince(start);
    return 0;
  }
  Result<state::Command> command = DecodeEntry(bytes);
  if (!command.ok()) {
    // Every replica holds the same bytes at this index, so this is corruption
    // or a bug, never bad client input. libraft stops applying (and retries
    // the same entry forever), which is the loud failure we want.
    // libraft retries the entry at every commit: log it once.
    if (self->apply_halted_) return RAFT_MALFORMED;
    self->apply_halted_ = true;
    log::Error("raft", fmt::format("FATAL: cannot apply entry {} ({} bytes): {}; applying halted",
                                   index.value(), buf->len, command.status().ToString()));
    std::fflush(stderr);
    return RAFT_MALFORMED;
  }
  const bool restores = std::holds_alternative<state::RestoreState>(command->body) ||
                        std::holds_alternative<state::RestoreStaged>(command->body);
  if (self->defer_applies_ && !restores) {
    Deferred& deferred = self->deferred_.emplace_back();
    deferred.command = std::move(command).value();
    deferred.index = index;
    if (self->apply_histogram_ != nullptr) {
      deferred.decode_time = std::chrono::steady_clock::now() - start;
    }
    *result = &deferred.result;
    return 0;
  }
  self->ApplyDeferred();  // what came before applies first
  std::optional<state::ApplyResult>* out = self->ImmediateSlot(index);
  if (const auto* restore = std::get_if<state::RestoreState>(&command->body)) {
    // Decoded here (no decoder had it), through the slot that hands back
    // the state it replaces.
    Result<state::Store> slot = state::Store::DecodeSnapshot(restore->snapshot);
    out->emplace(self->store_->Apply(*command, index, &slot));
    if ((*out)->status.ok() && slot.ok()) self->Retire(std::move(slot));
  } else if (std::holds_alternative<state::RestoreStaged>(command->body)) {
    std::optional<Result<state::Store>> slot = self->DecodeStaged(*command);
    out->emplace(self->store_->Apply(*command, index, slot ? &*slot : nullptr));
    if (slot && (*out)->status.ok() && slot->ok()) self->Retire(std::move(*slot));
  } else {
    out->emplace(self->store_->Apply(*command, index));
  }
  ++self->generation_;
  LogLockEvents((*out)->lock_events);
  *result = out;
  if (self->apply_histogram_ != nullptr) self->apply_histogram_->ObserveSince(start);
  return 0;
}

// A restore whose state the decoder holds (decision 0046) is applied from
// it: neither the bytes are copied nor the state decoded on the loop thread.
// Null, with nothing done, for every other entry; else the result's slot.
std::optional<state::ApplyResult>* FsmBridge::ApplyDecodedRestore(std::string_view framed,
                                                                  LogIndex index) {
  if (restore_decoder_ == nullptr || restore_decoder_->jobs() == 0) return nullptr;
  Result<std::string_view> payload = UnframeEntry(framed);
  if (!payload.ok() || !state::LooksLikeRestore(*payload)) return nullptr;
  std::string_view snapshot;
  Result<state::Command> command = state::DecodeRestoreCommand(*payload, &snapshot);
  if (!command.ok()) return nullptr;
  std::optional<Result<state::Store>> decoded = restore_decoder_->Take(snapshot);
  if (!decoded) return nullptr;
  ApplyDeferred();  // what came before applies first
  std::optional<state::ApplyResult>* out = ImmediateSlot(index);
  out->emplace(store_->Apply(*command, index, &*decoded));
  if ((*out)->status.ok() && decoded->ok()) Retire(std::move(*decoded));
  ++generation_;
  LogLockEvents((*out)->lock_events);
  return out;
}

std::optional<state::ApplyResult>* FsmBridge::ImmediateSlot(LogIndex index) {
  if (!defer_applies_) return &result_;
  // With applies deferred a raft_apply callback takes its result only at
  // the turn's end, after later entries (two restores in one turn, say)
  // were applied: each gets a slot of its own, counted as applied.
  TENURE_ASSERT(deferred_pending() == 0);
  Deferred& applied = deferred_.emplace_back();
  applied.index = index;
  ++deferred_applied_;
  return &applied.result;
}

std::optional<Result<state::Store>> FsmBridge::DecodeStaged(const state::Command& command) {
  const state::RestoreStaging* staging = store_->StagingFor(command);
  if (staging == nullptr) return std::nullopt;  // the Store refuses it
  if (restore_decoder_ != nullptr) {
    if (std::optional<Result<state::Store>> decoded = restore_decoder_->Take(staging->bytes)) {
      return decoded;
    }
  }
  return state::Store::DecodeSnapshot(staging->bytes);  // no decoder had them: here
}

int FsmBridge::Snapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                        unsigned* n_bufs) noexcept {
  auto* self = static_cast<FsmBridge*>(fsm->data);
  self->ApplyDeferred();  // the snapshot is at raft_last_applied
  self->snapshot_forked_ = false;
  *bufs = nullptr;
  *n_bufs = 0;
  if (self->store_->staging() != nullptr) return RAFT_BUSY;
  if (self->fsm_.snapshot_async != nullptr && !self->child_failed_) {  // in a child
    state::Store* store = self->store_;
    Status started = self->forked_.Start([store](std::string* out) { store->EncodeSnapshot(out); });
    if (started.ok()) {
      self->snapshot_forked_ = true;
      return 0;  // SnapshotAsync waits for the child's bytes
    }
    log::Warn("raft",
              fmt::format("encoding a raft snapshot on the loop thread: {}", started.ToString()));
  }
  self->child_failed_ = false;
  const auto start = std::chrono::steady_clock::now();
  self->snapshot_in_place_.clear();
  self->store_->EncodeSnapshot(&self->snapshot_in_place_);
  self->encode_time_ = std::chrono::steady_clock::now() - start;
  self->snapshot_buf_.base = self->snapshot_in_place_.data();
  self->snapshot_buf_.len = self->snapshot_in_place_.size();
  *bufs = &self->snapshot_buf_;
  *n_bufs = 1;
  return 0;
}

// On a libuv pool thread; only the child's bytes are touched here.
int FsmBridge::SnapshotAsync(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                             unsigned* n_bufs) noexcept {
  auto* self = static_cast<FsmBridge*>(fsm->data);
  if (!self->snapshot_forked_) return 0;  // encoded in place by Snapshot
  Result<std::string_view> bytes = self->forked_.Wait();
  if (!bytes.ok()) {
    self->child_error_ = bytes.status().ToString();
    return RAFT_IOERR;
  }
  self->snapshot_buf_.base = const_cast<char*>(bytes->data());  // read-only map, only read
  self->snapshot_buf_.len = bytes->size();
  *bufs = &self->snapshot_buf_;
  *n_bufs = 1;
  return 0;
}

int FsmBridge::SnapshotFinalize(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                                unsigned* n_bufs) noexcept {
  auto* self = static_cast<FsmBridge*>(fsm->data);
  if (self->snapshot_forked_) {
    if (!self->child_error_.empty()) {
      // The next snapshot is encoded in place, so a child that keeps failing
      // costs one fork per snapshot, not one per apply.
      log::Warn("raft", fmt::format("a raft snapshot failed: {}; the next one is encoded on the "
                                    "loop thread",
                                    self->child_error_));
      self->child_failed_ = true;
      self->child_error_.clear();
    } else if (self->snapshot_buf_.base != nullptr) {
      self->encode_time_ = self->forked_.child_time();
      if (self->forked_.fork_time() > std::chrono::milliseconds(50)) {
        log::Info("raft", fmt::format("fork for a raft snapshot held the loop {} ms",
                                      std::chrono::duration_cast<std::chrono::milliseconds>(
                                          self->forked_.fork_time())
                                          .count()));
      }
    }
    self->forked_.Finish();
  }
  // Counted once its file is written (when the io reports it: Node's), so
  // that "taken" means the log was compacted behind it.
  if (self->snapshot_buf_.base != nullptr) {
    if (self->put_status_ == kPutUnreported || self->put_status_ == 0) {
      self->RecordSnapshotTaken(self->encode_time_, self->snapshot_buf_.len);
    } else {
      log::Warn("raft", fmt::format("a raft snapshot of {} bytes was not written (libraft status "
                                    "{}); libraft takes another later",
                                    self->snapshot_buf_.len, self->put_status_));
    }
  }
  self->put_status_ = kPutUnreported;
  self->snapshot_forked_ = false;
  self->snapshot_in_place_ = std::string();
  self->snapshot_buf_ = {};
  *bufs = nullptr;
  *n_bufs = 0;
  return 0;
}

void FsmBridge::RecordSnapshotTaken(std::chrono::steady_clock::duration took, std::size_t bytes) {
  SnapshotMetrics* m = snapshot_metrics_;
  if (m == nullptr) return;
  m->encode_seconds.Observe(std::chrono::duration<double>(took).count());
  ++m->taken;
  m->last_taken_bytes = bytes;
}

// `replaced` holds the state a restore replaced (Store::Apply's slot).
void FsmBridge::Retire(Result<state::Store> replaced) {
  if (!retire_state_) return;  // destroyed here
  retire_state_(std::make_shared<state::Store>(std::move(replaced).value()));
}

int FsmBridge::Restore(struct raft_fsm* fsm, struct raft_buffer* buf) noexcept {
  auto* self = static_cast<FsmBridge*>(fsm->data);
  self->ApplyDeferred();  // in order, though the snapshot replaces it all
  std::string_view bytes(static_cast<const char*>(buf->base), buf->len);
  // A snapshot sent by the leader was decoded while its file was written
  // (Node's snapshot_put wrapper, decision 0049); at start, or when the
  // decoder had no room, it is decoded here.
  std::optional<Result<state::Store>> decoded;
  if (self->restore_decoder_ != nullptr) decoded = self->restore_decoder_->Take(bytes);
  Result<state::Store> restored =
      decoded ? std::move(*decoded) : state::Store::DecodeSnapshot(bytes);
  if (!restored.ok()) {
    // libraft keeps ownership of buf on failure and fails the start or the
    // InstallSnapshot.
    log::Warn("raft", fmt::format("cannot restore snapshot ({} bytes): {}", buf->len,
                                  restored.status().ToString()));
    return RAFT_MALFORMED;
  }
  Result<state::Store> replaced(std::move(*self->store_));
  const bool recording = replaced->recording_events();
  *self->store_ = std::move(restored).value();
  self->store_->RecordEvents(recording);  // a listener's choice, not the snapshot's
  self->Retire(std::move(replaced));
  self->result_.reset();
  ++self->generation_;
  ++self->restores_;
  if (SnapshotMetrics* m = self->snapshot_metrics_; m != nullptr) {
    ++m->installed;
    m->last_installed_bytes = buf->len;
    if (decoded) ++m->installed_decoded_ahead;
  }
  raft_free(buf->base);
  return 0;
}

LogIndex FsmBridge::NextIndex() const {
  // The raft index, unless a snapshot restore (state::RestoreState) carried
  // the Store's index past the log: then the one after the Store's, so that
  // indexes and fencing tokens never go backwards (decision 0024). Without a
  // restore the Store's index is never above the log's, and this is the
  // raft index. Every replica computes the same: applied_index() after the
  // entries up to raft index i is a function of those entries, whether they
  // were applied one by one or arrived in a snapshot. A queued entry
  // (decision 0062) stands for the Store it will leave.
  const std::uint64_t given =
      deferred_pending() > 0 ? deferred_.back().index.value() : store_->applied_index().value();
  return LogIndex(std::max<std::uint64_t>(raft_last_applied(raft_) + 1, given + 1));
}

void FsmBridge::ApplyDeferred() {
  while (deferred_applied_ < deferred_.size()) {
    Deferred& deferred = deferred_[deferred_applied_];
    std::chrono::steady_clock::time_point start;
    if (apply_histogram_ != nullptr) start = std::chrono::steady_clock::now();
    deferred.result.emplace(store_->Apply(deferred.command, deferred.index));
    ++deferred_applied_;
    ++generation_;
    LogLockEvents(deferred.result->lock_events);
    deferred.command = state::Command{};  // its bytes are not needed again
    if (apply_histogram_ != nullptr) {
      apply_histogram_->Observe(
          std::chrono::duration<double>(deferred.decode_time +
                                        (std::chrono::steady_clock::now() - start))
              .count());
    }
  }
}

void FsmBridge::ForgetAppliedSlots() {
  if (deferred_pending() > 0) return;
  deferred_.clear();
  deferred_applied_ = 0;
}

}  // namespace tenure::raft
