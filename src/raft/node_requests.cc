// Node requests (Propose, Barrier) and the polling that stands in for the
// state-change callback libraft 0.15 lacks: leadership, on_applied, last
// contact. See node_impl.h for the threading rules.
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <fmt/core.h>
#include <sys/statvfs.h>

#include <boost/asio/post.hpp>
#include <cstdio>
#include <cstring>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/limits.h"
#include "common/log.h"
#include "raft/disk_failure.h"
#include "raft/entry_codec.h"
#include "raft/node_impl.h"

namespace tenure::raft {

namespace asio = boost::asio;

namespace {

// A status with which libraft fails a request when its own disk write
// failed (as opposed to leadership changes and shutdown).
bool LogWriteFailed(int status) {
  return status == RAFT_IOERR || status == RAFT_NOSPACE || status == RAFT_CORRUPT ||
         status == RAFT_NOMEM || status == RAFT_TOOMANY;
}

}  // namespace

bool Node::Impl::RaftLeader() const {
  return phase_ == Phase::kRunning && raft_.state == RAFT_LEADER;
}

std::uint64_t Node::Impl::UvNowMs() const { return uv_hrtime() / 1'000'000; }

Status Node::Impl::CheckWritable() const {
  if (phase_ == Phase::kStopping) return Status::Unavailable("raft: node is shutting down");
  if (phase_ != Phase::kRunning) return Status::Unavailable("raft: node is not running");
  if (raft_.state != RAFT_LEADER) return consul::NoClusterLeader();
  return Status::Ok();
}

Status Node::Impl::FailureFromRaft(int rv, const char* what) const {
  switch (rv) {
    case RAFT_NOTLEADER:
      return consul::NoClusterLeader();
    case RAFT_LEADERSHIPLOST:
    case RAFT_SHUTDOWN:
      if (phase_ != Phase::kRunning) {
        return Status::Unavailable(
            fmt::format("raft: node shut down before the {} was committed; outcome unknown", what));
      }
      return Status::Unavailable(
          fmt::format("raft: leadership lost before the {} was committed; outcome unknown", what));
    default:
      return LoggedFailure(rv, what);
  }
}

// Disk failures name the data dir and the cause (a full disk is "no space
// left on device", not libraft's code); every unexpected failure is logged,
// at most once a second.
Status Node::Impl::LoggedFailure(int rv, const char* what) const {
  std::string text =
      IsDiskFailure(rv)
          ? fmt::format("raft: {} failed: {} (data dir {})", what,
                        DescribeDiskFailure(rv, raft_io_.errmsg,
                                            raft_errmsg(const_cast<struct raft*>(&raft_))),
                        options_.data_dir)
          : fmt::format("raft: {} failed: {}", what, raft_strerror(rv));
  if (std::uint64_t suppressed = 0; failure_log_.Admit(UvNowMs(), &suppressed)) {
    log::Write(
        log::Level::kWarn, "raft",
        fmt::format("node {}: {}{}", options_.id, text,
                    suppressed == 0 ? std::string()
                                    : fmt::format(" ({} more since the last line)", suppressed)));
  }
  return Status::Unavailable(std::move(text));
}

void Node::Impl::Propose(const state::Command& command, ProposeDone done) {
  auto fail = [&](Status status) {
    // Posted, so done never runs inside the caller's stack.
    asio::post(io_, [done = std::move(done), status = std::move(status)]() mutable {
      done(Result<state::ApplyResult>(std::move(status)));
    });
  };
  if (Status writable = CheckWritable(); !writable.ok()) return fail(std::move(writable));
  if (OneWriteAtATime()) return fail(last_disk_failure_);
  if (proposals_in_flight_ >= limits::kProposalsInFlightMax) {
    return fail(Status::Unavailable("too many writes in flight"));
  }

  struct raft_buffer buf = EncodeToRaftBuffer(command);
  if (buf.base == nullptr) return fail(Status::Unavailable("raft: out of memory"));
  const std::size_t framed_bytes = buf.len;
  // Entries wait in memory until applied: bound them by bytes as well.
  if (proposal_bytes_in_flight_ + framed_bytes > limits::kProposalBytesInFlightMax &&
      proposals_in_flight_ > 0) {
    raft_free(buf.base);
    return fail(Status::Unavailable("too many writes in flight"));
  }
  if (Status room = CheckDiskRoom(framed_bytes); !room.ok()) {
    raft_free(buf.base);
    return fail(std::move(room));
  }

  auto* proposal = new Proposal;
  proposal->req.data = proposal;
  proposal->impl = this;
  proposal->done = std::move(done);
  proposal->bytes = framed_bytes;
  int rv = raft_apply(&raft_, &proposal->req, &buf, 1, &Impl::ApplyDone);
  if (rv != 0) {
    raft_free(buf.base);  // ownership passes to libraft only on success
    done = std::move(proposal->done);
    delete proposal;
    return fail(FailureFromRaft(rv, "write"));
  }
  ++proposals_in_flight_;
  proposal_bytes_in_flight_ += framed_bytes;
  driver_->Poke();
}

void Node::Impl::ApplyDone(struct raft_apply* req, int status, void* result) noexcept {
  auto* proposal = static_cast<Proposal*>(req->data);
  Impl* self = proposal->impl;
  TENURE_ASSERT(self->proposals_in_flight_ > 0);
  --self->proposals_in_flight_;
  self->proposal_bytes_in_flight_ -= proposal->bytes;
  Result<state::ApplyResult> outcome =
      status == 0 ? Result<state::ApplyResult>(FsmBridge::TakeResult(result))
                  : Result<state::ApplyResult>(self->FailureFromRaft(status, "write"));
  self->NoteWriteOutcome(status, outcome.ok() ? Status::Ok() : outcome.status());
  self->ready_.push_back([done = std::move(proposal->done),
                          outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
  delete proposal;
}

void Node::Impl::Barrier(std::function<void(Status)> done) {
  Status writable = CheckWritable();
  if (writable.ok() && OneWriteAtATime()) writable = last_disk_failure_;
  if (writable.ok()) writable = CheckDiskRoom(8);
  if (!writable.ok()) {
    asio::post(io_, [done = std::move(done), status = std::move(writable)] { done(status); });
    return;
  }
  auto* request = new BarrierRequest;
  request->req.data = request;
  request->impl = this;
  request->done = std::move(done);
  int rv = raft_barrier(&raft_, &request->req, &Impl::BarrierDone);
  if (rv != 0) {
    asio::post(io_, [done = std::move(request->done), status = FailureFromRaft(rv, "barrier")] {
      done(status);
    });
    delete request;
    return;
  }
  ++barriers_in_flight_;
  driver_->Poke();
}

void Node::Impl::TransferLeadership(std::uint64_t id, std::function<void(Status)> done) {
  auto fail = [&](Status status) {
    asio::post(io_, [done = std::move(done), status = std::move(status)] { done(status); });
  };
  if (Status writable = CheckWritable(); !writable.ok()) return fail(std::move(writable));
  auto* request = new TransferRequest;
  request->req.data = request;
  request->impl = this;
  request->target = id;
  request->done = std::move(done);
  int rv = raft_transfer(&raft_, &request->req, id, &Impl::TransferDone);
  if (rv != 0) {
    Status why = rv == RAFT_BADID
                     ? Status::InvalidArgument(fmt::format("no other voter has id {}", id))
                 : rv == RAFT_NOTFOUND ? Status::InvalidArgument("no other voter to transfer to")
                                       : FailureFromRaft(rv, "leadership transfer");
    done = std::move(request->done);
    delete request;
    return fail(std::move(why));
  }
  driver_->Poke();
}

// libraft calls this once the target leads or an election timeout passed:
// success is judged by who leads now.
void Node::Impl::TransferDone(struct raft_transfer* req) noexcept {
  auto* request = static_cast<TransferRequest*>(req->data);
  Impl* self = request->impl;
  raft_id leader_id = 0;
  const char* leader_address = nullptr;
  raft_leader(&self->raft_, &leader_id, &leader_address);
  const bool moved = leader_id != 0 && leader_id != self->options_.id &&
                     (request->target == 0 || leader_id == request->target);
  Status status = moved ? Status::Ok()
                        : Status::Unavailable(fmt::format(
                              "leadership transfer to {} did not complete within the election "
                              "timeout",
                              request->target));
  self->ready_.push_back(
      [done = std::move(request->done), status = std::move(status)] { done(status); });
  delete request;
}

Status Node::Impl::ChangeFailure(int rv, std::uint64_t id) const {
  switch (rv) {
    case RAFT_DUPLICATEID:
      return Status::InvalidArgument(fmt::format("server id {} is already a member", id));
    case RAFT_DUPLICATEADDRESS:
      return Status::InvalidArgument("that address is already a member's");
    case RAFT_NOTFOUND:
    case RAFT_BADID:
      return Status::InvalidArgument(fmt::format("server id {} is not a member", id));
    case RAFT_CANTCHANGE:
      return Status::Unavailable("another membership change is under way; try again");
    default:
      return FailureFromRaft(rv, "membership change");
  }
}

void Node::Impl::AddVoter(std::uint64_t id, const std::string& address,
                          std::function<void(Status)> done) {
  auto fail = [&](Status status) {
    asio::post(io_, [done = std::move(done), status = std::move(status)] { done(status); });
  };
  if (Status writable = CheckWritable(); !writable.ok()) return fail(std::move(writable));
  if (id == 0 || address.empty()) return fail(Status::InvalidArgument("id and address required"));
  auto* request = new ChangeRequest;
  request->req.data = request;
  request->impl = this;
  request->id = id;
  request->then_promote = true;
  request->done = std::move(done);
  int rv = raft_add(&raft_, &request->req, id, address.c_str(), &Impl::ChangeDone);
  if (rv != 0) {
    done = std::move(request->done);
    delete request;
    return fail(ChangeFailure(rv, id));
  }
  driver_->Poke();
}

void Node::Impl::RemoveServer(std::uint64_t id, std::function<void(Status)> done) {
  auto fail = [&](Status status) {
    asio::post(io_, [done = std::move(done), status = std::move(status)] { done(status); });
  };
  if (Status writable = CheckWritable(); !writable.ok()) return fail(std::move(writable));
  auto* request = new ChangeRequest;
  request->req.data = request;
  request->impl = this;
  request->id = id;
  request->done = std::move(done);
  int rv = raft_remove(&raft_, &request->req, id, &Impl::ChangeDone);
  if (rv != 0) {
    done = std::move(request->done);
    delete request;
    return fail(ChangeFailure(rv, id));
  }
  driver_->Poke();
}

// raft_add done: promote (raft_assign catches the server up first), from
// the next turn, outside libraft's callback. Any other step done: report.
void Node::Impl::ChangeDone(struct raft_change* req, int status) noexcept {
  auto* request = static_cast<ChangeRequest*>(req->data);
  Impl* self = request->impl;
  if (status == 0 && request->then_promote && self->phase_ == Phase::kRunning) {
    request->then_promote = false;
    self->ready_.push_back([self, request] {
      request->req = {};
      request->req.data = request;
      int rv =
          self->phase_ == Phase::kRunning
              ? raft_assign(&self->raft_, &request->req, request->id, RAFT_VOTER, &Impl::ChangeDone)
              : RAFT_SHUTDOWN;
      if (rv != 0) {
        Status outcome = self->ChangeFailure(rv, request->id);
        auto done = std::move(request->done);
        delete request;
        done(outcome);
        return;
      }
      self->driver_->Poke();
    });
    return;
  }
  Status outcome = status == 0 ? Status::Ok() : self->ChangeFailure(status, request->id);
  self->ready_.push_back(
      [done = std::move(request->done), outcome = std::move(outcome)] { done(outcome); });
  delete request;
}

void Node::Impl::IssueLeadershipBarrier(std::uint64_t term) {
  auto* request = new BarrierRequest;
  request->req.data = request;
  request->impl = this;
  request->leadership_term = term;
  int rv = raft_barrier(&raft_, &request->req, &Impl::BarrierDone);
  if (rv != 0) {
    log::Warn("raft", fmt::format("node {}: leadership barrier in term {} failed: {}", options_.id,
                                  term, raft_strerror(rv)));
    delete request;
    leader_term_ = 0;  // retried at the next poll if still leader
    return;
  }
  ++barriers_in_flight_;
}

void Node::Impl::BarrierDone(struct raft_barrier* req, int status) noexcept {
  auto* request = static_cast<BarrierRequest*>(req->data);
  Impl* self = request->impl;
  TENURE_ASSERT(self->barriers_in_flight_ > 0);
  --self->barriers_in_flight_;
  self->NoteWriteOutcome(status,
                         status == 0 ? Status::Ok() : self->FailureFromRaft(status, "barrier"));
  if (request->leadership_term != 0) {
    // PollLeadership turns this into on_leadership(true) if the term still
    // holds; a failed barrier means leadership is already gone.
    if (status == 0) self->barrier_done_term_ = request->leadership_term;
  } else {
    Status outcome = status == 0 ? Status::Ok() : self->FailureFromRaft(status, "barrier");
    self->ready_.push_back(
        [done = std::move(request->done), outcome = std::move(outcome)] { done(outcome); });
  }
  delete request;
}

void Node::Impl::AfterTurn() {
  ForgetLostLeader();
  PollLeadership();
  PollLastContact();
  CheckLiveness();
  BoundLogMemory();
  // User callbacks last: they may Propose, Barrier or Stop. Swap first so
  // callbacks queued meanwhile wait for the next turn instead of looping.
  if (!ready_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(ready_);
    for (auto& callback : batch) callback();
  }
  if (fsm_.generation() != notified_generation_) {
    notified_generation_ = fsm_.generation();
    if (on_applied_) on_applied_();
  }
  if (close_waiting_for_disk_ && (LogPersisted() || UvNowMs() >= close_deadline_uv_ms_)) {
    close_waiting_for_disk_ = false;
    asio::post(io_, [this] { MaybeBeginClose(); });
  }
}

void Node::Impl::PollLeadership() {
  bool leader = RaftLeader();
  std::uint64_t term = raft_.current_term;
  if (leader_term_ != 0 && (!leader || term != leader_term_)) {
    log::Info("raft",
              fmt::format("node {} lost leadership of term {} (now term {})", options_.id,
                          leader_term_, term),
              {log::Num("node_id", static_cast<unsigned long long>(options_.id)),
               log::Num("term", static_cast<unsigned long long>(leader_term_)),
               log::Num("new_term", static_cast<unsigned long long>(term))});
    leader_term_ = 0;
    if (reported_leader_) {
      reported_leader_ = false;
      if (on_leadership_) on_leadership_(false);
    }
  }
  if (leader && leader_term_ == 0 && !OneWriteAtATime() && CheckDiskRoom(8).ok()) {
    // Report only after a barrier: then the Store holds every entry that
    // any earlier leader committed.
    leader_term_ = term;
    log::Info("raft", fmt::format("node {} is leader of term {}", options_.id, term),
              {log::Num("node_id", static_cast<unsigned long long>(options_.id)),
               log::Num("term", static_cast<unsigned long long>(term))});
    IssueLeadershipBarrier(term);
    if (driver_) driver_->Poke();
  }
  if (leader && !reported_leader_ && barrier_done_term_ == term && leader_term_ == term) {
    reported_leader_ = true;
    if (on_leadership_) on_leadership_(true);
  }
}

// libraft 0.15 refuses every vote and pre-vote while the follower has a
// leader (recv_request_vote.c: has_leader), however long ago it heard from
// it; only its own election timer, drawn in [T, 2T) from the last message,
// clears that (by making it a candidate). With pre-vote on, after a leader
// dies the survivors elect no one until the LATER of their timers fires.
// When the transport says every raft connection with the leader closed
// under us (Transport::LinkLost: a killed process's kernel closes its
// sockets at once), the follower forgets the leader the way libraft does on
// a conversion (convert.c, convertClearFollower: id 0, address freed with
// raft_free), so it grants a survivor's pre-vote and vote at once, and
// brings its election timer forward to fire within [T/2, T) from now, never
// later than it would have. The window starts at T/2 so that a leader that
// is alive (its connections closed by a network blip or a restart of its
// transport) reconnects and reasserts itself first (libraft redials after
// kConnectRetryDelayMs, then sends a heartbeat every heartbeat timeout);
// its width keeps two survivors from campaigning at the same instant.
//
// Safety does not depend on any of this: a follower without a leader is a
// state libraft itself creates, a vote is still granted only by raft's
// rules (term, log up to date, one vote a term, persisted), and timers only
// decide when. A leader that is alive is learned again from its next
// AppendEntries (recvUpdateLeader); pre-vote keeps a follower that
// campaigns meanwhile from raising the term unless a majority has also lost
// the leader. Runs after uv_run, outside libraft's stack, on the loop
// thread that also runs the transport (decision 0031).
void Node::Impl::ForgetLostLeader() {
  if (phase_ != Phase::kRunning) return;
  if (raft_.state != RAFT_FOLLOWER) {
    election_timer_shortened_ = false;  // a conversion drew a new timeout
    return;
  }
  const raft_id leader = raft_.follower_state.current_leader.id;
  if (leader == 0) return;
  const unsigned timeout = raft_.election_timeout;
  std::string why;
  if (!transport_ || !transport_->LinkLost(leader, &why)) {
    if (election_timer_shortened_) {
      // A leader again: the timeout libraft draws (election.c, electionResetTimer).
      election_timer_shortened_ = false;
      raft_.follower_state.randomized_election_timeout = static_cast<unsigned>(
          raft_io_.random(&raft_io_, static_cast<int>(timeout), 2 * static_cast<int>(timeout)));
    }
    return;
  }
  raft_free(raft_.follower_state.current_leader.address);
  raft_.follower_state.current_leader.address = nullptr;
  raft_.follower_state.current_leader.id = 0;
  ++leaders_forgotten_;
  const raft_time now = raft_io_.time(&raft_io_);
  const raft_time elapsed = now > raft_.election_timer_start ? now - raft_.election_timer_start : 0;
  const raft_time soon =
      elapsed + static_cast<raft_time>(raft_io_.random(&raft_io_, static_cast<int>(timeout / 2),
                                                       static_cast<int>(timeout)));
  unsigned& randomized = raft_.follower_state.randomized_election_timeout;
  if (soon < randomized) {
    randomized = static_cast<unsigned>(soon);
    election_timer_shortened_ = true;
  }
  const raft_time due = randomized > elapsed ? randomized - elapsed : 0;
  log::Info("raft",
            fmt::format("node {} forgot leader {} of term {}: {}; election timer due in {} ms",
                        options_.id, leader, raft_.current_term, why, due),
            {log::Num("node_id", static_cast<unsigned long long>(options_.id)),
             log::Num("leader_id", static_cast<unsigned long long>(leader)),
             log::Num("term", static_cast<unsigned long long>(raft_.current_term)),
             log::Num("election_due_ms", static_cast<unsigned long long>(due)),
             {"reason", why}});
}

void Node::Impl::PollLastContact() {
  if (phase_ != Phase::kRunning) return;
  if (raft_.state == RAFT_LEADER) {
    last_contact_uv_ms_ = UvNowMs();
  } else if (raft_.state == RAFT_FOLLOWER && raft_.follower_state.current_leader.id != 0) {
    last_contact_uv_ms_ = raft_.election_timer_start;
  }
}

}  // namespace tenure::raft

namespace tenure::raft {

void Node::Impl::CheckLiveness() {
  if (phase_ != Phase::kRunning || broken_) return;
  if (raft_.state == RAFT_UNAVAILABLE) {
    // libraft gives up on itself after an error it cannot handle (a vote or
    // term it cannot persist, an entry it cannot apply): from then on it
    // drops every message and never leads or follows again.
    MarkBroken(Status::Unavailable(
        fmt::format("raft: libraft stopped (unavailable state) in term {}: {}", raft_.current_term,
                    raft_errmsg(&raft_)[0] != '\0' ? raft_errmsg(&raft_) : "no reason given")));
  }
}

void Node::Impl::MarkBroken(Status why) {
  if (broken_) return;
  broken_ = true;
  log::Error("raft", fmt::format("node {}: FATAL: this raft instance cannot go on: {}", options_.id,
                                 why.message()));
  if (on_broken_) {
    ready_.push_back([this, why = std::move(why)] {
      if (on_broken_) on_broken_(why);
    });
  }
}

void Node::Impl::BoundLogMemory() {
  if (phase_ != Phase::kRunning) return;
  const struct raft_log& log = raft_.log;
  std::size_t held = log.back >= log.front ? log.back - log.front : log.size - log.front + log.back;
  raft_index first = log.offset + 1;
  raft_index last = log.offset + held;
  log_memory_.Trim(first, last);
  for (raft_index index = std::max<raft_index>(log_memory_.last_index() + 1, first); index <= last;
       ++index) {
    // raft_log is a circular buffer; entry `index` sits at front + index - first.
    std::size_t slot = (log.front + static_cast<std::size_t>(index - first)) % log.size;
    log_memory_.Append(index, log.entries[slot].buf.len);
  }
  LogMemory::Policy policy = log_memory_.Decide(raft_last_applied(&raft_), log.snapshot.last_index);
  raft_set_snapshot_threshold(&raft_, policy.threshold);
  raft_set_snapshot_trailing(&raft_, policy.trailing);
}

}  // namespace tenure::raft

namespace tenure::raft {

Status Node::Impl::CheckDiskRoom(std::size_t bytes) {
  // statvfs at most every 100 ms; between, count down what was proposed.
  std::uint64_t now = UvNowMs();
  if (!disk_checked_ || now - disk_checked_uv_ms_ >= 100 ||
      disk_free_bytes_ < limits::kRaftDiskReserveBytes + bytes) {
    struct statvfs fs {};
    if (statvfs(options_.data_dir.c_str(), &fs) != 0) return Status::Ok();  // cannot tell
    disk_free_bytes_ = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    disk_checked_uv_ms_ = now;
    disk_checked_ = true;
  }
  if (disk_free_bytes_ < limits::kRaftDiskReserveBytes + bytes) {
    Status refused = Status::Unavailable(fmt::format(
        "raft: write failed: no space left on device ({:.1f} MiB free, the log needs {} MiB "
        "to go on) (data dir {})",
        static_cast<double>(disk_free_bytes_) / (1024.0 * 1024.0),
        limits::kRaftDiskReserveBytes >> 20, options_.data_dir));
    if (std::uint64_t suppressed = 0; failure_log_.Admit(now, &suppressed)) {
      log::Write(
          log::Level::kInfo, "raft",
          fmt::format("node {}: {}{}", options_.id, refused.message(),
                      suppressed == 0 ? std::string()
                                      : fmt::format(" ({} more since the last line)", suppressed)));
    }
    return refused;
  }
  disk_free_bytes_ -= bytes;
  return Status::Ok();
}

bool Node::Impl::OneWriteAtATime() const {
  return disk_failed_ && proposals_in_flight_ + barriers_in_flight_ > 0;
}

void Node::Impl::NoteWriteOutcome(int status, const Status& failure) {
  if (status == 0) {
    disk_failed_ = false;
  } else if (LogWriteFailed(status)) {
    disk_failed_ = true;
    last_disk_failure_ = failure;
    disk_checked_ = false;  // look again before the next write
  }
}

}  // namespace tenure::raft
