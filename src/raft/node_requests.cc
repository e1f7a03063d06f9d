// Node requests: Propose, Barrier, leadership transfer and membership
// changes, each handed to libraft and answered from its callback. The
// polling that stands in for libraft's missing state-change callback is in
// node_polling.cc. See node_impl.h for the threading rules.
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
  Status failure = status == 0 ? Status::Ok() : self->FailureFromRaft(status, "write");
  self->NoteWriteOutcome(status, failure);
  // The result is taken in the callback: with applies deferred (decision
  // 0062) its slot is filled by the ApplyDeferred that runs before it.
  self->ready_.push_back(
      [done = std::move(proposal->done), failure = std::move(failure), result]() mutable {
        if (!failure.ok()) return done(Result<state::ApplyResult>(std::move(failure)));
        done(Result<state::ApplyResult>(FsmBridge::TakeResult(result)));
      });
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

}  // namespace tenure::raft
