// client::Election's watch of the leader key (client/election.h).
#include <utility>

#include "client/election_impl.h"

namespace tenure::client {

// ---- the leader-key watch ------------------------------------------------------

void Election::Observe(std::function<void(const LeaderInfo&)> callback) {
  impl_->observer = std::move(callback);
  impl_->reported = false;
  if (impl_->watching) {
    // Report the current state at once; the running watch reports changes.
    // Restart from index 0 so the first report is fresh.
    impl_->watch_index = 0;
    impl_->Stop(session_.http(), kWatchTimer, &impl_->watch_req);
    impl_->watching = false;
  }
  EnsureWatch();
}

void Election::EnsureWatch() {
  if (impl_->watching) return;
  impl_->watching = true;
  WatchOnce();
}

void Election::WatchOnce() {
  if (!impl_->observer && !holding_) {
    impl_->watching = false;
    return;
  }
  const std::uint64_t index = impl_->watch_index;
  BlockingGet read = KvRead(LeaderKey(), "", index);
  impl_->watch_req = Send("GET", std::move(read.target), "", read.timeout_ms, {},
                          [this, index](Result<net::ClientResponse> got) {
                            impl_->watch_req = 0;
                            auto info =
                                got.ok() ? ParseLeader(*got) : Result<LeaderInfo>(got.status());
                            auto seen = info.ok() ? ParseIndexHeader(got->Header(kIndexHeader))
                                                  : Result<std::uint64_t>(info.status());
                            if (!seen.ok()) {
                              // Not a loss: the lease arithmetic covers transient errors.
                              After(kWatchTimer, options_.error_retry_ms, [this] { WatchOnce(); });
                              return;
                            }
                            impl_->watch_index = NextWaitIndex(*seen, index);
                            HandleObservation(*info, *seen);
                            WatchOnce();
                          });
}

void Election::HandleObservation(const LeaderInfo& info, std::uint64_t index) {
  // An answer from before our grant must not end it: only states at or after
  // the grant's index count (the fence is the grant's raft index).
  const bool current = !holding_ || fence_ == 0 || index >= fence_;
  if (current) observed_ = info;
  if (holding_ && current) {
    if (info.session == session_.id()) {
      if (fence_ == 0) fence_ = info.fence;  // a server without X-Tenure-Fence
    } else {
      std::string what = !info.exists ? "the leader key was deleted"
                         : info.session.empty()
                             ? "the leader key was released"
                             : "the leader key is now held by session " + info.session;
      Lose(Status::FailedPrecondition("leadership lost: " + what));
    }
  }
  if (impl_->observer && current && (!impl_->reported || !(info == impl_->last_reported))) {
    impl_->reported = true;
    impl_->last_reported = info;
    auto observer = impl_->observer;
    observer(info);
  }
}

}  // namespace tenure::client
