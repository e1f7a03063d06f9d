// The polling that stands in for the state-change callback libraft 0.15
// lacks (leadership, on_applied, last contact), run after every loop turn
// that touched raft, and the health checks that go with it: liveness, the
// log's memory, the disk's room, the outcome of log writes. Requests are in
// node_requests.cc; see node_impl.h for the threading rules.
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

void Node::Impl::AfterTurn() {
  // The entries libraft applied in this turn reach the Store now, after it
  // submitted the next log write (decision 0062), and before anything
  // below or any handler reads the Store.
  fsm_.ApplyDeferred();
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
  fsm_.ForgetAppliedSlots();  // their raft_apply callbacks ran above
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
  // When this server last took (or installed) a snapshot: the first turn
  // that sees its index.
  const std::uint64_t now = UvNowMs();
  if (log.snapshot.last_index != snapshot_index_seen_) {
    snapshot_index_seen_ = log.snapshot.last_index;
    snapshot_seen_uv_ms_ = now;
  }
  std::uint64_t since =
      snapshot_index_seen_ == 0 ? LogMemory::kLongAgo : now - snapshot_seen_uv_ms_;
  LogMemory::Policy policy =
      log_memory_.Decide(raft_last_applied(&raft_), log.snapshot.last_index, since);
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
