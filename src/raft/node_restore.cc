// Node::Impl: snapshot restores decoded off the loop thread (decision 0046,
// raft/restore_decoder.h). A log write carrying a RestoreState, or the
// RestoreStaged of a restore in chunks (decision 0050), is reported to
// libraft only once the state it carries is decoded.
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <fmt/core.h>

#include <climits>
#include <map>
#include <mutex>

#include "common/limits.h"
#include "common/log.h"
#include "raft/entry_codec.h"
#include "raft/node_impl.h"

namespace tenure::raft {

void Node::OfferDecodedRestore(std::string snapshot, Result<state::Store> decoded) {
  impl_->restore_decoder_.Offer(std::move(snapshot), std::move(decoded));
}

std::vector<RestoreDecoder::JobPtr> Node::Impl::StartRestoreDecodes(
    const struct raft_entry entries[], unsigned n) {
  std::vector<RestoreDecoder::JobPtr> jobs;
  for (unsigned i = 0; i < n; ++i) {
    if (entries[i].type != RAFT_COMMAND) continue;
    std::string_view framed(static_cast<const char*>(entries[i].buf.base), entries[i].buf.len);
    Result<std::string_view> payload = UnframeEntry(framed);
    if (!payload.ok()) continue;
    if (state::LooksLikeStagedRestore(*payload)) {
      if (RestoreDecoder::JobPtr job = GatherStagedRestore(*payload))
        jobs.push_back(std::move(job));
      continue;
    }
    if (!state::LooksLikeRestore(*payload)) continue;
    std::string_view snapshot;
    if (!state::DecodeRestoreCommand(*payload, &snapshot).ok()) continue;  // its apply says why
    RestoreDecoder::JobPtr job = restore_decoder_.Start(snapshot);
    if (job == nullptr) {
      log::Info("raft", "a snapshot restore will be decoded at its apply: two decodes already run");
      continue;
    }
    if (!RestoreDecoder::Done(job)) {
      log::Info("raft", fmt::format("decoding the {}-byte state of a snapshot restore before "
                                    "acknowledging it",
                                    snapshot.size()));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

RestoreDecoder::JobPtr Node::Impl::GatherStagedRestore(std::string_view payload) {
  Result<state::Command> command = state::DecodeCommand(payload);
  if (!command.ok()) return nullptr;  // its apply says why
  if (const auto* chunk = std::get_if<state::RestoreChunk>(&command->body)) {
    if (chunk->offset == 0) {
      staged_gather_ = StagedGather{chunk->restore_id, chunk->total, std::string()};
    } else if (!staged_gather_ || staged_gather_->id != chunk->restore_id ||
               staged_gather_->bytes.size() != chunk->offset) {
      staged_gather_.reset();  // a gap: its swap is decoded at its apply
      return nullptr;
    }
    if (chunk->total > limits::kSnapshotBytesMax ||
        staged_gather_->bytes.size() + chunk->bytes.size() > chunk->total) {
      staged_gather_.reset();  // the apply refuses it
      return nullptr;
    }
    if (staged_gather_->bytes.empty()) staged_gather_->bytes.reserve(chunk->total);
    staged_gather_->bytes.append(chunk->bytes);
    return nullptr;
  }
  const auto* staged = std::get_if<state::RestoreStaged>(&command->body);
  if (staged == nullptr || !staged_gather_ || staged_gather_->id != staged->restore_id ||
      staged_gather_->bytes.size() != staged->total) {
    return nullptr;
  }
  std::string bytes = std::move(staged_gather_->bytes);
  staged_gather_.reset();
  const std::size_t size = bytes.size();
  RestoreDecoder::JobPtr job = restore_decoder_.StartOwned(std::move(bytes));
  if (job == nullptr) {
    log::Info("raft", "a snapshot restore will be decoded at its apply: two decodes already run");
  } else if (!RestoreDecoder::Done(job)) {
    log::Info("raft", fmt::format("decoding the {}-byte state of a snapshot restore before "
                                  "acknowledging its last chunk",
                                  size));
  }
  return job;
}

void Node::Impl::CompleteAppend(struct raft_io_append* req, int status, raft_io_append_cb cb,
                                std::vector<RestoreDecoder::JobPtr> jobs) {
  bool decoded = true;
  for (const auto& job : jobs) decoded = decoded && RestoreDecoder::Done(job);
  if (held_appends_.empty() && (decoded || raft_close_called_)) {
    cb(req, status);
    return;
  }
  held_appends_.push_back({req, status, cb, std::move(jobs)});
}

void Node::Impl::ReleaseHeldAppends(bool all) {
  bool released = ReleaseHeldSnapshotPut(all);
  while (!held_appends_.empty()) {
    HeldAppend& front = held_appends_.front();
    bool decoded = true;
    for (const auto& job : front.jobs) decoded = decoded && RestoreDecoder::Done(job);
    if (!decoded && !all) break;
    HeldAppend done = std::move(front);
    held_appends_.pop_front();
    done.cb(done.req, done.status);
    released = true;
  }
  // Outside uv_run (a posted handler): let libraft's reaction go out now.
  if (released && !all && phase_ == Phase::kRunning) {
    AfterTurn();
    if (driver_) driver_->Poke();
  }
}

namespace {

// libraft sets a snapshot put's `data` for itself (the raft instance, or its
// install request), so the node is found by the request.
std::mutex snapshot_puts_mutex;
std::map<const struct raft_io_snapshot_put*, void*> snapshot_puts;  // the Node::Impl

// The node that wrapped `req`, forgotten here (its callback came).
void* TakeSnapshotPutOwner(const struct raft_io_snapshot_put* req) {
  std::lock_guard<std::mutex> lock(snapshot_puts_mutex);
  auto it = snapshot_puts.find(req);
  TENURE_ASSERT(it != snapshot_puts.end());  // every wrapped put was recorded
  void* owner = it->second;
  snapshot_puts.erase(it);
  return owner;
}

}  // namespace

int Node::Impl::PutWrapped(struct raft_io* io, unsigned trailing, struct raft_io_snapshot_put* req,
                           const struct raft_snapshot* snapshot, raft_io_snapshot_put_cb wrapper) {
  {
    std::lock_guard<std::mutex> lock(snapshot_puts_mutex);
    snapshot_puts[req] = this;
  }
  const int rv = original_io_snapshot_put_(io, trailing, req, snapshot, wrapper);
  if (rv != 0) {  // refused at once: no callback will come
    std::lock_guard<std::mutex> lock(snapshot_puts_mutex);
    snapshot_puts.erase(req);
  }
  return rv;
}

int Node::Impl::WrappedIoSnapshotPut(struct raft_io* io, unsigned trailing,
                                     struct raft_io_snapshot_put* req,
                                     const struct raft_snapshot* snapshot,
                                     raft_io_snapshot_put_cb cb) noexcept {
  auto* self = static_cast<Impl*>(static_cast<struct raft*>(io->data)->data);
  if (trailing != 0) {
    // A snapshot this server took: nothing to decode. raft_uv deletes the
    // closed segments that end before `index - trailing`, and closes the
    // open one when the put starts. Taken in a child process, a snapshot's
    // put starts some entries after its index, so libraft's trailing count
    // (which bounds the log it keeps in memory) would leave on disk a gap
    // between the previous snapshot and the log: with the newest snapshot
    // damaged, `tenure recover` could fall back to the previous one only by
    // dropping entries. On disk the log is kept back to the previous
    // snapshot, as a synchronous snapshot's segments kept it.
    const raft_index previous = self->raft_.log.snapshot.last_index;
    if (previous != 0 && snapshot->index > previous) {
      const raft_index since_previous = snapshot->index - previous;
      if (since_previous > trailing && since_previous <= UINT_MAX) {
        trailing = static_cast<unsigned>(since_previous);
      }
    }
    // The outcome goes to the fsm's metrics before libraft's callback runs
    // (it finalizes the snapshot).
    self->snapshot_taken_cb_ = cb;
    const int rv = self->PutWrapped(io, trailing, req, snapshot, &Impl::IoSnapshotTaken);
    if (rv != 0) self->fsm_.NoteSnapshotWritten(rv);
    return rv;
  }
  if (snapshot->n_bufs != 1 || self->snapshot_put_.req != nullptr) {
    return self->original_io_snapshot_put_(io, trailing, req, snapshot, cb);
  }
  std::string_view bytes(static_cast<const char*>(snapshot->bufs[0].base), snapshot->bufs[0].len);
  RestoreDecoder::JobPtr job = self->restore_decoder_.Start(bytes);
  if (job == nullptr) return self->original_io_snapshot_put_(io, trailing, req, snapshot, cb);
  log::Info("raft", fmt::format("node {}: decoding the {}-byte snapshot sent by the leader while "
                                "its file is written",
                                self->options_.id, bytes.size()));
  self->snapshot_put_ = SnapshotPut{req, cb, std::move(job), false, 0};
  const int rv = self->PutWrapped(io, trailing, req, snapshot, &Impl::IoSnapshotPut);
  if (rv != 0) self->snapshot_put_ = SnapshotPut{};
  return rv;
}

void Node::Impl::IoSnapshotTaken(struct raft_io_snapshot_put* req, int status) noexcept {
  auto* self = static_cast<Impl*>(TakeSnapshotPutOwner(req));
  self->fsm_.NoteSnapshotWritten(status);
  std::exchange(self->snapshot_taken_cb_, nullptr)(req, status);
}

void Node::Impl::IoSnapshotPut(struct raft_io_snapshot_put* req, int status) noexcept {
  auto* self = static_cast<Impl*>(TakeSnapshotPutOwner(req));
  SnapshotPut& put = self->snapshot_put_;
  TENURE_ASSERT(put.req == req);
  if (status != 0 || self->raft_close_called_ || RestoreDecoder::Done(put.job)) {
    SnapshotPut done = std::exchange(put, SnapshotPut{});
    done.cb(done.req, status);  // in libuv's callback: libraft reacts as usual
    return;
  }
  put.written = true;  // held until the decode's posted wake-up
  put.status = status;
}

bool Node::Impl::ReleaseHeldSnapshotPut(bool all) {
  SnapshotPut& put = snapshot_put_;
  if (put.req == nullptr || !put.written) return false;
  if (!all && !RestoreDecoder::Done(put.job)) return false;
  SnapshotPut done = std::exchange(put, SnapshotPut{});
  done.cb(done.req, done.status);  // libraft restores from it now
  return true;
}

}  // namespace tenure::raft
