#include "raft/append_result_guard.h"

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
  send_ = io->send;
  io->start = &AppendResultGuard::Start;
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
  return self->start_(io, msecs, tick_cb, &AppendResultGuard::Recv);
}

void AppendResultGuard::Recv(struct raft_io* io, struct raft_message* message) noexcept {
  AppendResultGuard* self = Of(io);
  if (message->type != RAFT_IO_APPEND_ENTRIES) return self->recv_cb_(io, message);
  // libraft frees the entries while handling the message: read them first.
  self->handling_append_ = true;
  self->match_max_ = message->append_entries.prev_log_index + message->append_entries.n_entries;
  self->recv_cb_(io, message);
  self->handling_append_ = false;
}

int AppendResultGuard::Send(struct raft_io* io, struct raft_io_send* req,
                            const struct raft_message* message, raft_io_send_cb cb) noexcept {
  AppendResultGuard* self = Of(io);
  if (!self->handling_append_ || message->type != RAFT_IO_APPEND_ENTRIES_RESULT) {
    return self->send_(io, req, message, cb);
  }
  const struct raft_append_entries_result& result = message->append_entries_result;
  if (result.rejected != 0 || result.last_log_index <= self->match_max_) {
    return self->send_(io, req, message, cb);
  }
  // The backends copy or encode the message before returning.
  struct raft_message lowered = *message;
  lowered.append_entries_result.last_log_index = self->match_max_;
  ++self->lowered_;
  if (self->on_lowered_) {
    self->on_lowered_(Lowered{message->server_id, result.last_log_index, self->match_max_});
  }
  return self->send_(io, req, &lowered, cb);
}

}  // namespace tenure::raft
