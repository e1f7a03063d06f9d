// Node::Impl: snapshot restores decoded off the loop thread (decision 0046,
// raft/restore_decoder.h). A log write carrying a RestoreState is reported
// to libraft only once the state it carries is decoded.
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <fmt/core.h>

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
    if (!payload.ok() || !state::LooksLikeRestore(*payload)) continue;
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
  if (held_appends_.empty()) return;
  bool released = false;
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

}  // namespace tenure::raft
