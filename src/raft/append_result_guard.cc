#include "raft/append_result_guard.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "common/assert.h"

namespace tenure::raft {
namespace {

// raft_io has no spare user pointer (data is raft's, impl the backend's):
// find the guard by the io's address. Guards of different ios may live on
// different threads (tests run several Nodes), hence the lock.
std::mutex registry_mutex;
std::map<const struct raft_io*, AppendResultGuard*>& Registry() {
  static std::map<const struct raft_io*, AppendResultGuard*> registry;
  return registry;
}

}  // namespace

AppendResultGuard::~AppendResultGuard() {
  if (io_ == nullptr) return;
  io_->start = start_;
  io_->append = append_;
  io_->send = send_;
  std::lock_guard<std::mutex> lock(registry_mutex);
  Registry().erase(io_);
}

void AppendResultGuard::Install(struct raft_io* io, OnLowered on_lowered) {
  TENURE_ASSERT(io_ == nullptr);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    TENURE_ASSERT(Registry().emplace(io, this).second);
  }
  io_ = io;
  on_lowered_ = std::move(on_lowered);
  start_ = io->start;
  append_ = io->append;
  send_ = io->send;
  io->start = &AppendResultGuard::Start;
  io->append = &AppendResultGuard::Append;
  io->send = &AppendResultGuard::Send;
}

AppendResultGuard* AppendResultGuard::Of(struct raft_io* io) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = Registry().find(io);
  TENURE_ASSERT(it != Registry().end());
  return it->second;
}

int AppendResultGuard::Start(struct raft_io* io, unsigned msecs, raft_io_tick_cb tick_cb,
                             raft_io_recv_cb recv_cb) noexcept {
  AppendResultGuard* self = Of(io);
  self->recv_cb_ = recv_cb;
  self->handling_ = Handling::kNothing;
  self->matched_term_ = 0;
  self->matched_index_ = 0;
  return self->start_(io, msecs, tick_cb, &AppendResultGuard::Recv);
}

void AppendResultGuard::Recv(struct raft_io* io, struct raft_message* message) noexcept {
  AppendResultGuard* self = Of(io);
  switch (message->type) {
    case RAFT_IO_APPEND_ENTRIES:
      // libraft frees the entries while handling the message: read them first.
      self->handling_ = Handling::kAppendEntries;
      self->handling_term_ = message->append_entries.term;
      self->handling_end_ =
          message->append_entries.prev_log_index + message->append_entries.n_entries;
      break;
    case RAFT_IO_INSTALL_SNAPSHOT:
      self->handling_ = Handling::kInstallSnapshot;
      break;
    default:
      break;
  }
  self->recv_cb_(io, message);
  self->handling_ = Handling::kNothing;
}

// libraft writes entries while handling an AppendEntries only once it
// accepted them (the log matched at prevLogIndex; conflicts truncated).
int AppendResultGuard::Append(struct raft_io* io, struct raft_io_append* req,
                              const struct raft_entry entries[], unsigned n,
                              raft_io_append_cb cb) noexcept {
  AppendResultGuard* self = Of(io);
  if (self->handling_ == Handling::kAppendEntries) self->Matched();
  return self->append_(io, req, entries, n, cb);
}

void AppendResultGuard::Matched() {
  if (matched_term_ != handling_term_) {
    matched_term_ = handling_term_;
    matched_index_ = 0;
  }
  matched_index_ = std::max(matched_index_, handling_end_);
}

int AppendResultGuard::Send(struct raft_io* io, struct raft_io_send* req,
                            const struct raft_message* message, raft_io_send_cb cb) noexcept {
  AppendResultGuard* self = Of(io);
  if (message->type != RAFT_IO_APPEND_ENTRIES_RESULT ||
      message->append_entries_result.rejected != 0) {
    return self->send_(io, req, message, cb);
  }
  const struct raft_append_entries_result& result = message->append_entries_result;
  if (self->handling_ == Handling::kInstallSnapshot) {
    return self->SendSnapshotNoop(io, req, message, cb);
  }
  if (self->handling_ == Handling::kAppendEntries && result.term == self->handling_term_) {
    self->Matched();
  }
  const auto* r = static_cast<const struct raft*>(io->data);
  TENURE_ASSERT(r != nullptr);
  raft_index known = r->commit_index;
  if (result.term == self->matched_term_) known = std::max(known, self->matched_index_);
  if (result.last_log_index <= known) return self->send_(io, req, message, cb);
  // The backends copy or encode the message before returning.
  struct raft_message lowered = *message;
  lowered.append_entries_result.last_log_index = known;
  ++self->lowered_;
  if (self->on_lowered_) {
    self->on_lowered_(Lowered{message->server_id, result.term, result.last_log_index, known});
  }
  return self->send_(io, req, &lowered, cb);
}

// An InstallSnapshot answered at once: this follower already holds the
// snapshot's entries (its own snapshot is newer, or its log has them).
// libraft reports the snapshot's index, which a leader that already counted
// the follower that far takes as no news: it stays in its snapshot state,
// ignores the follower's answers to its heartbeats, and after the install
// timeout probes below the follower's snapshot and sends the snapshot
// again, for ever (found by the simulation, seed 29925924437, once this
// guard had lowered the follower's earlier answers to its commit index).
// Reporting the commit index instead is true and moves the leader on:
// committed entries are in every later leader's log (Leader Completeness).
int AppendResultGuard::SendSnapshotNoop(struct raft_io* io, struct raft_io_send* req,
                                        const struct raft_message* message,
                                        raft_io_send_cb cb) noexcept {
  const auto* r = static_cast<const struct raft*>(io->data);
  TENURE_ASSERT(r != nullptr);
  if (message->append_entries_result.last_log_index >= r->commit_index) {
    return send_(io, req, message, cb);
  }
  struct raft_message raised = *message;
  raised.append_entries_result.last_log_index = r->commit_index;
  ++raised_;
  return send_(io, req, &raised, cb);
}

}  // namespace tenure::raft
