// Store: snapshot restores (docs/snapshots.md, decision 0024), replicated as
// one RestoreState or as RestoreChunks and a RestoreStaged (decision 0050).
#include "state/store.h"

#include <algorithm>
#include <utility>

#include "common/strings.h"
#include "state/field_limits.h"

namespace tenure::state {

Status Store::RaiseClock(ClusterMs to) {
  if (now_ms_ >= to) return Status();
  DurationMs shift = 0;
  if (__builtin_sub_overflow(to.ms(), now_ms_.ms(), &shift)) {
    return Status::InvalidArgument("the replicated clock is out of range");
  }
  for (auto& [key, until] : lock_delays_) {
    std::int64_t moved = 0;
    if (__builtin_add_overflow(until.ms(), shift, &moved)) {
      return Status::InvalidArgument("the lock-delay window of key " + GoQuote(key) +
                                     " is out of range");
    }
    until = ClusterMs(moved);
  }
  now_ms_ = to;
  return Status();
}

// Every replica decodes the same bytes and decides the same: the state is
// replaced whole, or (bytes that do not decode, a state that breaks an
// invariant) nothing changes and the command answers why. The leader checked
// the bytes before proposing, so a refusal here is a bug or a damaged entry.
//
// Indexes never go backwards: clients of this cluster have seen indexes up to
// `index - 1`, clients of the snapshot's cluster up to its applied index. The
// restored applied index and the KV, sessions and ACL table indexes become at
// least `index`, so every blocking query wakes to an index above the one it
// waited on; the next command is applied above the snapshot's applied index
// (raft/fsm.cc numbers it after applied_index()), so a fencing token or
// ModifyIndex the snapshot's cluster handed out is never handed out again.
// Restored into a fresh server (its index below the snapshot's), the state is
// the snapshot's, byte for byte apart from the members.
//
// `predecoded`, when given, is DecodeSnapshot(snapshot) computed elsewhere
// (off the loop thread): the same function of the same bytes, so replicas
// that decoded ahead and replicas that decode here decide the same.
// DecodeSnapshot ran the whole Validate on the file's state; the
// adjustments above only raise indexes to `index` (every "x <= applied"
// invariant holds, since applied rose at least as much as any of them), put
// in this cluster's members (valid here, and modified below our applied
// index) and move the clock and every lock-delay window up by one shift
// (each window keeps its distance from the clock). What a raise can break is
// a range: checked here in O(lock-delay windows), so that applying a million
// keys does not walk them all again on the loop thread. Tests and the
// simulation run the whole Validate after every apply (CheckInvariants).
Status Store::CheckRestoreAdjustments() const {
  if (applied_index_.value() >= (std::uint64_t{1} << 62)) {
    return Status::InvalidArgument("the applied index " + std::to_string(applied_index_.value()) +
                                   " is out of range");
  }
  TENURE_RETURN_IF_ERROR(CheckClusterMs("the replicated clock", now_ms_));
  for (const auto& [key, until] : lock_delays_) {
    TENURE_RETURN_IF_ERROR(
        CheckClusterMs("lock-delay window of key " + QuoteCut(key) + ": end", until));
  }
  return Status::Ok();
}

void Store::ApplyRestore(std::string_view snapshot, LogIndex index, Result<Store>* predecoded,
                         ApplyResult* result) {
  Result<Store> decoded = predecoded != nullptr ? std::move(*predecoded) : DecodeSnapshot(snapshot);
  if (!decoded.ok()) {
    result->status = Status::InvalidArgument("snapshot restore refused: " +
                                             std::string(decoded.status().message()));
    return;
  }
  Store restored = std::move(decoded).value();
  // The members are this cluster's servers (decision 0008), not data.
  restored.members_ = members_;
  restored.applied_index_ = std::max(restored.applied_index_, index);
  restored.kv_index_ = std::max(restored.kv_index_, index);
  restored.sessions_index_ = std::max(restored.sessions_index_, index);
  // A compaction clients were told of stays (decision 0048 section 1).
  restored.compact_revision_ = std::max(restored.compact_revision_, compact_revision_);
  // The replicated clock never goes back, and every restored lock-delay
  // window keeps the length it had left in the file (decision 0037): a file
  // whose clock is behind ours has its windows moved up with it, so none ends
  // early. A clock ahead of ours is kept: the replicated clock is only ever
  // compared with itself, and leaders stamp on from wherever it stands.
  if (Status raised = restored.RaiseClock(now_ms_); !raised.ok()) {
    result->status =
        Status::InvalidArgument("snapshot restore refused: " + std::string(raised.message()));
    return;
  }
  restored.wall_ms_ = wall_ms_;
  restored.acl_.RaiseIndexes(index);
  // The queue endpoint's index must not go back either (once queues exist).
  if (!queues_index_.is_none() || !restored.queues_index_.is_none()) {
    restored.queues_index_ = std::max(restored.queues_index_, index);
  }
  if (Status valid = restored.CheckRestoreAdjustments(); !valid.ok()) {
    result->status =
        Status::InvalidArgument("snapshot restore refused: " + std::string(valid.message()));
    return;
  }
  restored.replaced_at_ = restored.applied_index_;
  // Not state: the checkpoint record and a divergence found stay this
  // replica's (every replica restores the same bytes at the same index).
  restored.checkpoint_ = checkpoint_;
  restored.divergence_ = std::move(divergence_);
  restored.changed_since_checkpoint_ = true;
  restored.record_events_ = record_events_;
  restored.changes_ = Changes();
  restored.changes_.everything = true;
  restored.changes_.sessions = true;
  restored.changes_.acl = true;
  // The replaced state goes back in the caller's slot: freeing a million
  // keys takes 150 ms, and where that happens is the caller's choice
  // (raft/fsm.cc hands it to a thread of its own, decision 0049).
  if (predecoded != nullptr) *predecoded = Store(std::move(*this));
  *this = std::move(restored);
}

namespace {

// A chunk or swap that does not match the staging: 409 with `what`.
Status StagingConflict(const std::string& what) {
  return Status::Conflict("snapshot restore refused: " + what +
                          "; another restore or a change of leader came between; try again");
}

}  // namespace

// A chunk at offset 0 starts a staging, replacing any other: a restore
// proposed after a leader died mid-way starts afresh. Any other chunk must
// continue the staging it names exactly where it ends; one that does not
// (a chunk lost to a change of leader, another restore begun meanwhile) is
// refused and the staging dropped, so its RestoreStaged is refused too.
// Every replica applies the same entries and stages the same bytes.
void Store::ApplyRestoreChunk(const RestoreChunk& c, LogIndex index, ApplyResult* result) {
  if (c.offset == 0) {
    staging_ = RestoreStaging{c.restore_id, c.total, std::string(), index, now_ms_};
    staging_->bytes.reserve(c.total);
  } else if (!staging_ || staging_->id != c.restore_id || staging_->total != c.total ||
             staging_->bytes.size() != c.offset) {
    result->status = StagingConflict("its chunk at offset " + std::to_string(c.offset) +
                                     " does not continue the staged bytes (" +
                                     (staging_ && staging_->id == c.restore_id
                                          ? std::to_string(staging_->bytes.size())
                                          : std::string("none")) +
                                     ")");
    if (staging_ && staging_->id == c.restore_id) staging_.reset();
    return;
  }
  staging_->bytes.append(c.bytes);
  staging_->last_chunk = index;
  staging_->last_chunk_ms = now_ms_;
}

bool Store::StagingLapsedAt(ClusterMs now) const {
  return staging_ && now.ms() - staging_->last_chunk_ms.ms() > kStagingIdleMs;
}

const RestoreStaging* Store::StagingFor(const Command& command) const {
  const auto* staged = std::get_if<RestoreStaged>(&command.body);
  if (staged == nullptr || !staging_ || staging_->id != staged->restore_id ||
      staging_->bytes.size() != staged->total) {
    return nullptr;
  }
  // Store::Apply's clock rule, then its drop.
  const ClusterMs now =
      IsClusterMsInRange(command.now_ms) ? std::max(now_ms_, command.now_ms) : now_ms_;
  return StagingLapsedAt(now) ? nullptr : &*staging_;
}

void Store::ApplyRestoreStaged(const RestoreStaged& c, LogIndex index, Result<Store>* decoded,
                               ApplyResult* result) {
  if (!staging_ || staging_->id != c.restore_id || staging_->bytes.size() != c.total) {
    result->status = StagingConflict(staging_ && staging_->id == c.restore_id
                                         ? std::to_string(staging_->bytes.size()) + " of its " +
                                               std::to_string(c.total) + " bytes are staged"
                                         : std::string("its bytes are no longer staged"));
    if (staging_ && staging_->id == c.restore_id) staging_.reset();
    return;
  }
  // Out of the Store before the swap: the replaced state keeps no copy.
  const std::string staged = std::move(staging_->bytes);
  staging_.reset();
  ApplyRestore(staged, index, decoded, result);
}

}  // namespace tenure::state
