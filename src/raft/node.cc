// Node::Impl's lifecycle (Start, Stop, the close path) and libraft's I/O
// wrappers. Node's own methods are in node_accessors.cc, requests and
// polling in node_requests.cc; the shared state in node_impl.h.
#include "raft/node.h"

#include "common/log.h"

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on

#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <unordered_map>

#include "common/assert.h"
#include "common/limits.h"
#include "raft/disk/dir_lock.h"
#include "raft/disk/startup.h"
#include "raft/io_destroy_offload.h"
#include "raft/node_impl.h"
#include "raft/segment_zero_fill.h"

namespace tenure::raft {

namespace asio = boost::asio;

namespace {

// libraft error code -> Status code for Start failures.
Status StartError(int rv, std::string_view what, const char* message) {
  std::string text = fmt::format("raft: {}: {} ({})", what, message, raft_strerror(rv));
  switch (rv) {
    case RAFT_CORRUPT:
    case RAFT_MALFORMED:
      return Status::Corruption(std::move(text));
    case RAFT_INVALID:
    case RAFT_BADID:
    case RAFT_NAMETOOLONG:
    case RAFT_DUPLICATEID:
    case RAFT_DUPLICATEADDRESS:
      return Status::InvalidArgument(std::move(text));
    case RAFT_NOMEM:
      return Status::Unavailable(std::move(text));
    default:
      return Status::IoError(std::move(text));
  }
}

// libuv writes to TCP sockets with writev(), not send(MSG_NOSIGNAL), so a
// write to a peer that just went away raises SIGPIPE, whose default action
// kills the process (seen when a leader outlives its followers). A
// process-wide setting, made only if nobody installed a handler already.
void IgnoreSigpipe() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

Node::Impl::Impl(asio::io_context& io, state::Store& store, NodeOptions options)
    : io_(io),
      store_(store),
      options_(std::move(options)),
      fsm_(&store),
      restore_decoder_([weak = std::weak_ptr<Impl*>(alive_), &io = io_] {
        asio::post(io, [weak] {
          if (std::shared_ptr<Impl*> self = weak.lock()) (*self)->ReleaseHeldAppends(false);
        });
      }),
      log_memory_(options_.log_bytes_max, options_.trailing_bytes_max, options_.snapshot_threshold,
                  options_.snapshot_trailing, options_.snapshot_spacing_ms) {
  fsm_.set_restore_decoder(&restore_decoder_);
  fsm_.set_snapshot_in_child(true);
  fsm_.set_defer_applies(true);  // decision 0062
  fsm_.set_retire_state([this](std::shared_ptr<state::Store> replaced) {
    state_retirer_.Retire(std::move(replaced));
  });
}

Node::Impl::~Impl() {
  if (phase_ == Phase::kRunning || phase_ == Phase::kStopping) CloseSynchronously();
  TENURE_ASSERT(phase_ == Phase::kIdle || phase_ == Phase::kStopped);
}

Status Node::Impl::LockDataDir() {
  Result<disk::DirLock> lock = disk::DirLock::Take(options_.data_dir);
  if (!lock.ok()) return lock.status();
  dir_lock_ = std::move(*lock);
  return Status::Ok();
}

void Node::Impl::UnlockDataDir() { dir_lock_.Release(); }

Status Node::Impl::Start() {
  if (phase_ != Phase::kIdle) return Status::FailedPrecondition("raft: Start called twice");
  if (options_.id == 0) return Status::InvalidArgument("raft: node id must be > 0");
  if (options_.address.empty()) return Status::InvalidArgument("raft: empty raft address");
  if (options_.data_dir.empty()) return Status::InvalidArgument("raft: empty data dir");
  if (options_.heartbeat_timeout_ms == 0 ||
      options_.heartbeat_timeout_ms >= options_.election_timeout_ms) {
    return Status::InvalidArgument(fmt::format(
        "raft: heartbeat timeout {} ms must be > 0 and below the election timeout {} ms",
        options_.heartbeat_timeout_ms, options_.election_timeout_ms));
  }
  if (!store_.applied_index().is_none()) {
    return Status::FailedPrecondition("raft: Start needs an empty Store (the log refills it)");
  }
  std::error_code ec;
  // Snapshots and the log hold ACL secrets (decision 0019): a data dir
  // tenure creates is its owner's alone.
  if (std::filesystem::create_directories(options_.data_dir, ec) && !ec) {
    std::filesystem::permissions(options_.data_dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec) {
    return Status::IoError(
        fmt::format("raft: create data dir {}: {}", options_.data_dir, ec.message()));
  }
  IgnoreSigpipe();
  if (Status locked = LockDataDir(); !locked.ok()) {
    phase_ = Phase::kStopped;
    return locked;
  }
  // Before libraft sees the directory (its init already deletes files):
  // damage refuses to start, a torn tail is cut (docs/recovery.md).
  if (Status prepared = disk::PrepareDataDir(options_.data_dir, options_.id); !prepared.ok()) {
    UnlockDataDir();
    phase_ = Phase::kStopped;
    return prepared;
  }
  if (Status opened = OpenIo(); !opened.ok()) {
    UnlockDataDir();
    phase_ = Phase::kStopped;
    return opened;
  }

  if (!options_.bootstrap.empty()) {
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    for (const Peer& peer : options_.bootstrap) {
      rv = raft_configuration_add(&conf, peer.id, peer.address.c_str(), RAFT_VOTER);
      if (rv != 0) break;
    }
    if (rv == 0) rv = raft_bootstrap(&raft_, &conf);
    raft_configuration_close(&conf);
    // CANTBOOTSTRAP: the data dir already holds a log; the options only
    // matter on the very first start.
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {
      return FailStart(StartError(rv, "bootstrap", raft_errmsg(&raft_)));
    }
  }

  raft_set_election_timeout(&raft_, options_.election_timeout_ms);
  raft_set_heartbeat_timeout(&raft_, options_.heartbeat_timeout_ms);
  // Pre-vote halves 3-node failover (1.7 s instead of 3 s, measured before clusters
  // shipped; docs/benchmarks.md has today's failover times).
  raft_set_pre_vote(&raft_, true);
  raft_set_snapshot_threshold(&raft_, options_.snapshot_threshold);
  raft_set_snapshot_trailing(&raft_, options_.snapshot_trailing);
  raft_set_install_snapshot_timeout(&raft_, options_.install_snapshot_timeout_ms);

  // Loads the snapshot (restore) and the log; a single voter self-elects
  // and applies its whole log right here.
  int rv = raft_start(&raft_);
  if (rv != 0) return FailStart(StartError(rv, "start", raft_errmsg(&raft_)));
  fsm_.ApplyDeferred();  // the Store holds the log before anyone asks
  fsm_.ForgetAppliedSlots();

  phase_ = Phase::kRunning;
  notified_generation_ = fsm_.generation();
  last_contact_uv_ms_ = UvNowMs();
  driver_ = std::make_unique<UvDriver>(io_, &loop_,
                                       UvDriver::Hooks{.after_run = [this] { AfterTurn(); },
                                                       .on_loop_dead = [this] { FinishClose(); }});
  driver_->Start();
  log::Info("raft",
            fmt::format("node {} started at {} (dir {}, term {}, last index {}, applied {}, "
                        "snapshots restored {})",
                        options_.id, options_.address, options_.data_dir, raft_.current_term,
                        raft_last_index(&raft_), raft_last_applied(&raft_), fsm_.restores()));
  return Status::Ok();
}

Status Node::Impl::OpenIo() {
  int rv = uv_loop_init(&loop_);
  if (rv != 0) return Status::IoError(fmt::format("raft: uv_loop_init: {}", uv_strerror(rv)));
  loop_initialized_ = true;
  TransportOptions transport;
  transport.id = options_.id;
  transport.address = options_.address;
  transport.bind_address = options_.bind_address;
  transport.node_name = options_.node_name;
  transport.http_address = options_.http_address;
  transport.etcd_address = options_.etcd_address;
  transport.zk_address = options_.zk_address;
  transport.key = options_.cluster_key;
  transport.tls_accept = options_.tls_accept;
  transport.tls_dial = options_.tls_dial;
  transport.election_timeout_ms = options_.election_timeout_ms;
  transport.message_time_ms = options_.message_time_ms;
  transport.inbound_bytes_max = options_.inbound_bytes_max;
  transport_ = std::make_unique<Transport>(io_, &loop_, std::move(transport));
  transport_->set_hooks(Transport::Hooks{
      .admit = [this](const wire::Hello& hello) { return AdmitPeer(hello); },
      .join =
          [this](const wire::Hello& hello, std::function<void(wire::JoinAnswer)> answer) {
            HandleJoin(hello, std::move(answer));
          },
      .poke =
          [this] {
            if (driver_) driver_->Poke();
          }});
  // Bind before libraft starts, so a port in use fails the start clearly.
  if (Status listened = transport_->Listen(); !listened.ok()) {
    transport_.reset();
    uv_loop_close(&loop_);
    loop_initialized_ = false;
    return listened;
  }
  // A closed segment's AIO context must not cost the loop thread an RCU wait.
  StartIoDestroyReaper();
  // Segments made with written blocks: log writes overwrite (decision 0059).
  EnableSegmentZeroFill();
  rv = raft_uv_init(&raft_io_, &loop_, options_.data_dir.c_str(), transport_->raw());
  if (rv != 0) {
    Status status = StartError(rv, "io", raft_io_.errmsg);
    transport_.reset();
    uv_loop_close(&loop_);
    loop_initialized_ = false;
    return status;
  }
  // Corruption must stop the server, not be "recovered" by dropping segments.
  raft_uv_set_auto_recovery(&raft_io_, false);
  raft_uv_set_connect_retry_delay(&raft_io_, kConnectRetryDelayMs);
  original_io_close_ = raft_io_.close;
  raft_io_.close = &Impl::WrappedIoClose;
  // libraft 0.15 would let a new leader count this server's stale entries
  // as matched (append_result_guard.h).
  append_result_guard_.Install(&raft_io_, [id = options_.id](const AppendResultGuard::Lowered& l) {
    log::Info("raft",
              fmt::format("node {}: reporting to leader {} (term {}) a match up to index {}, "
                          "not {} (entries after it may be stale)",
                          id, l.leader, l.term, l.reported, l.stored));
  });

  // Outermost, so that the time covers the whole write the guard passes on.
  original_io_append_ = raft_io_.append;
  raft_io_.append = &Impl::WrappedIoAppend;
  original_io_send_ = raft_io_.send;
  raft_io_.send = &Impl::WrappedIoSend;
  // raft_uv 0.15 implements async_work (on libuv's pool) but calls itself
  // version 1, and raft_init refuses an asynchronous fsm snapshot (decision
  // 0049) from a version 1 io.
  if (raft_io_.async_work != nullptr && raft_io_.version < 2) raft_io_.version = 2;
  original_io_snapshot_put_ = raft_io_.snapshot_put;
  raft_io_.snapshot_put = &Impl::WrappedIoSnapshotPut;

  // raft_init probes the file system (O_DIRECT, AIO): tens of ms.
  rv = raft_init(&raft_, &raft_io_, fsm_.fsm(), options_.id, options_.address.c_str());
  if (rv != 0) {
    Status status = StartError(rv, "init", raft_errmsg(&raft_));
    FreeIo();
    return status;
  }
  raft_.data = this;
  fsm_.set_raft(&raft_);
  return Status::Ok();
}

Status Node::Impl::FailStart(Status why) {
  // raft_init succeeded, so handles exist: close raft and drain the loop
  // synchronously (we are not inside any callback here).
  log::Warn("raft", fmt::format("node {} failed to start: {}", options_.id, why.ToString()));
  raft_close_called_ = true;
  raft_close(&raft_, &Impl::RaftClosed);
  while (uv_loop_alive(&loop_)) uv_run(&loop_, UV_RUN_DEFAULT);
  TENURE_ASSERT(raft_closed_);
  FreeIo();
  UnlockDataDir();
  phase_ = Phase::kStopped;
  return why;
}

void Node::Impl::Stop(std::function<void()> done) {
  switch (phase_) {
    case Phase::kIdle:
    case Phase::kStopped:
      phase_ = Phase::kStopped;
      asio::post(io_, std::move(done));
      return;
    case Phase::kStopping:
      stop_waiters_.push_back(std::move(done));
      return;
    case Phase::kRunning:
      break;
  }
  phase_ = Phase::kStopping;
  stop_waiters_.push_back(std::move(done));
  join_addresses_.clear();
  if (join_timer_) join_timer_->cancel();
  close_deadline_uv_ms_ = UvNowMs() + kCloseDrainMaxMs;
  log::Write(
      log::Level::kInfo, "raft",
      fmt::format("node {} stopping ({} writes in flight)", options_.id, proposals_in_flight_));
  // Never raft_close from a raft callback, and Stop may be called from one of
  // ours: always close on a fresh asio turn.
  asio::post(io_, [this] { MaybeBeginClose(); });
}

bool Node::Impl::LogPersisted() const {
  // raft_last_index only reads, but libraft's API is not const-correct.
  return raft_.last_stored >= raft_last_index(const_cast<struct raft*>(&raft_));
}

void Node::Impl::MaybeBeginClose() {
  if (raft_close_called_) return;
  // libraft 0.15 bug: raft_close cancels the leader's queued (not yet
  // written) appends one by one, and each cancellation truncates the log at
  // its own index, so with two or more queued the second truncation is past
  // the end of the log: an assertion in debug builds, a crash in Debian's.
  // New writes are refused now, so the writes in flight reach disk within a
  // few ms; AfterTurn calls back here until then. A disk that stalls past
  // the deadline gets the close anyway (followers' queued appends are safe).
  if (!LogPersisted() && UvNowMs() < close_deadline_uv_ms_) {
    close_waiting_for_disk_ = true;
    return;
  }
  if (!LogPersisted()) {
    log::Info("raft", fmt::format("node {}: log writes still in flight after {} ms; closing anyway",
                                  options_.id, kCloseDrainMaxMs));
  }
  close_waiting_for_disk_ = false;
  raft_close_called_ = true;
  ReleaseHeldAppends(true);  // libraft must see every write done before it closes
  raft_close(&raft_, &Impl::RaftClosed);
  // raft_close failed every outstanding request synchronously; deliver
  // them and report the lost leadership now.
  AfterTurn();
  driver_->Poke();  // closing handles: the loop must run again
}

void Node::Impl::FinishClose() {
  // on_loop_dead: posted by the driver once uv_loop_alive() returned 0.
  TENURE_ASSERT(phase_ == Phase::kStopping);
  TENURE_ASSERT(raft_closed_);
  TENURE_ASSERT(proposals_in_flight_ == 0);
  TENURE_ASSERT(barriers_in_flight_ == 0);
  AfterTurn();  // anything queued by the last uv_run
  driver_.reset();
  FreeIo();
  UnlockDataDir();
  phase_ = Phase::kStopped;
  log::Info("raft", fmt::format("node {} stopped", options_.id));
  std::vector<std::function<void()>> waiters = std::move(stop_waiters_);
  stop_waiters_.clear();
  for (auto& waiter : waiters) waiter();  // may destroy *this: nothing after
}

void Node::Impl::FreeIo() {
  // Only now that the loop drained (libraft pitfall 3, docs/architecture.md: the io close
  // callback can run before the last segment writer closed).
  raft_uv_close(&raft_io_);
  transport_.reset();
  if (loop_initialized_) {
    uv_run(&loop_, UV_RUN_NOWAIT);  // a handle the transport closed just now
    int rv = uv_loop_close(&loop_);
    if (rv != 0) log::Info("raft", fmt::format("uv_loop_close: {}", uv_strerror(rv)));
    loop_initialized_ = false;
  }
}

void Node::Impl::CloseSynchronously() {
  // Misuse fallback: the Node is being destroyed without a completed Stop.
  // Close and drain right here; queued user callbacks are dropped since
  // whatever they capture may already be gone.
  log::Warn("raft",
            fmt::format("node {} destroyed without Stop; closing synchronously", options_.id));
  driver_.reset();
  if (!raft_close_called_) {
    raft_close_called_ = true;
    ReleaseHeldAppends(true);
    raft_close(&raft_, &Impl::RaftClosed);
  }
  while (uv_loop_alive(&loop_)) uv_run(&loop_, UV_RUN_DEFAULT);
  fsm_.ApplyDeferred();  // what libraft counts as applied is in the Store
  ready_.clear();
  fsm_.ForgetAppliedSlots();
  FreeIo();
  UnlockDataDir();
  phase_ = Phase::kStopped;
}

namespace {

// Log writes in flight, by request: the append callback is handed only the
// request, and libraft owns its data field. Several nodes (tests) may run
// on different threads, hence the lock; one write is far dearer than it.
struct PendingAppend {
  void* node;            // the Node::Impl that wrote
  Histogram* histogram;  // null: not timed
  raft_io_append_cb cb;
  std::chrono::steady_clock::time_point start;
  std::vector<RestoreDecoder::JobPtr> restore_jobs;  // decodes it waits for
};
std::mutex pending_appends_mutex;
std::unordered_map<const struct raft_io_append*, PendingAppend> pending_appends;

}  // namespace

int Node::Impl::WrappedIoAppend(struct raft_io* io, struct raft_io_append* req,
                                const struct raft_entry entries[], unsigned n,
                                raft_io_append_cb cb) noexcept {
  auto* self = static_cast<Impl*>(static_cast<struct raft*>(io->data)->data);
  std::vector<RestoreDecoder::JobPtr> jobs = self->StartRestoreDecodes(entries, n);
  if (self->append_histogram_ == nullptr && jobs.empty()) {
    return self->original_io_append_(io, req, entries, n, cb);
  }
  {
    std::lock_guard<std::mutex> lock(pending_appends_mutex);
    pending_appends[req] = {self, self->append_histogram_, cb, std::chrono::steady_clock::now(),
                            std::move(jobs)};
  }
  int rv = self->original_io_append_(io, req, entries, n, &Impl::IoAppended);
  if (rv != 0) {  // refused at once: no callback will come
    std::lock_guard<std::mutex> lock(pending_appends_mutex);
    pending_appends.erase(req);
  }
  return rv;
}

int Node::Impl::WrappedIoSend(struct raft_io* io, struct raft_io_send* req,
                              const struct raft_message* message, raft_io_send_cb cb) noexcept {
  auto* self = static_cast<Impl*>(static_cast<struct raft*>(io->data)->data);
  // replication.c sendAppendEntriesResult: a write that completes on a
  // follower that has no leader (libraft's own conversions leave it without
  // one; so does ForgetLostLeader). The caller frees req; the leader, if
  // any, sends again.
  if (message->server_id == 0 || message->server_address == nullptr) return RAFT_NOCONNECTION;
  return self->original_io_send_(io, req, message, cb);
}

void Node::Impl::IoAppended(struct raft_io_append* req, int status) noexcept {
  PendingAppend pending{};
  {
    std::lock_guard<std::mutex> lock(pending_appends_mutex);
    auto it = pending_appends.find(req);
    TENURE_ASSERT(it != pending_appends.end());  // every wrapped write was recorded
    pending = it->second;
    pending_appends.erase(it);
  }
  if (status == 0 && pending.histogram != nullptr) pending.histogram->ObserveSince(pending.start);
  static_cast<Impl*>(pending.node)
      ->CompleteAppend(req, status, pending.cb, std::move(pending.restore_jobs));
}

void Node::Impl::WrappedIoClose(struct raft_io* io, raft_io_close_cb cb) {
  auto* self = static_cast<Impl*>(static_cast<struct raft*>(io->data)->data);
  // raft_uv closes only once its pool work is done, and a snapshot's child
  // may still be encoding: end it (the snapshot is simply not taken).
  self->fsm_.AbandonSnapshot();
  self->raft_io_close_cb_ = cb;
  self->original_io_close_(io, &Impl::IoClosedOnce);
}

void Node::Impl::IoClosedOnce(struct raft_io* io) {
  auto* self = static_cast<Impl*>(static_cast<struct raft*>(io->data)->data);
  if (self->io_close_fired_) {
    // The racy second call from the last segment writer's close.
    log::Warn("raft",
              fmt::format("node {}: swallowed a second io close callback", self->options_.id));
    return;
  }
  self->io_close_fired_ = true;
  self->raft_io_close_cb_(io);  // libraft's ioCloseCb -> RaftClosed
}

void Node::Impl::RaftClosed(struct raft* r) {
  static_cast<Impl*>(r->data)->raft_closed_ = true;  // frees nothing: see FreeIo
}

}  // namespace tenure::raft
