// tenure::Election: a handle to a client::Election on the client's thread.
#include "tenure/election.h"

#include <utility>

#include "client/election.h"
#include "sdk/core.h"

namespace tenure {

namespace {

Status Gone() {
  return Status::FailedPrecondition("tenure: the election or its session was destroyed");
}

// Runs `fn(election)` on the loop thread, or `done(Gone())` when it is gone;
// `done(kUnavailable)` on the calling thread once the client is closed.
template <typename Done, typename Fn>
void Dispatch(sdk::Core* core, std::uint64_t handle, Done done, Fn fn) {
  auto run = [core, handle, done, fn = std::move(fn)]() mutable {
    client::Election* election = core->FindElection(handle);
    if (election == nullptr) {
      done(Gone());
      return;
    }
    fn(*election, core->Guard(handle, std::move(done)));
  };
  if (!core->Post(std::move(run))) done(Status::Unavailable(sdk::kClosed));
}

}  // namespace

Election::Election(Session& session, ElectionOptions options)
    : core_(session.core_), options_(std::move(options)) {
  sdk::Core* core = core_.get();
  const std::uint64_t owner = session.handle_;
  (void)core_->Run([&] { handle_ = core->AddElection(owner, options_); });
}

Election::~Election() {
  sdk::Core* core = core_.get();
  const std::uint64_t handle = handle_;
  if (core->OnLoopThread()) {
    // Maybe in a callback of its own: its callbacks stop now, and the
    // library object goes once that callback returned.
    core->Retire(handle);
    core->Post([core, handle] { core->Remove(handle); });
  } else {
    (void)core->Run([core, handle] { core->Remove(handle); });
  }
}

void Election::Campaign(std::string value, std::function<void(Status)> done) {
  Dispatch(core_.get(), handle_, std::move(done),
           [value = std::move(value)](client::Election& election,
                                      std::function<void(Status)> finish) mutable {
             if (election.campaigning()) {
               finish(Status::FailedPrecondition("tenure: campaign: one is in progress already"));
               return;
             }
             election.Campaign(std::move(value), std::move(finish));
           });
}

Status Election::Campaign(std::string value) {
  return sdk::AwaitStatus(
      core_.get(), "Election::Campaign(value)",
      [&](std::function<void(Status)> done) { Campaign(std::move(value), std::move(done)); });
}

Result<bool> Election::TryOnce(std::string value) {
  sdk::Core* core = core_.get();
  return sdk::Await<bool>(core, "Election::TryOnce", [&](std::function<void(Result<bool>)> done) {
    Dispatch(core, handle_, std::move(done),
             [value = std::move(value)](client::Election& election,
                                        std::function<void(Result<bool>)> finish) mutable {
               election.TryOnce(std::move(value), std::move(finish));
             });
  });
}

void Election::Cancel() {
  sdk::Core* core = core_.get();
  (void)core_->Run([&] {
    if (client::Election* election = core->FindElection(handle_)) election->Cancel();
  });
}

void Election::Resign(std::function<void(Status)> done) {
  Dispatch(core_.get(), handle_, std::move(done),
           [](client::Election& election, std::function<void(Status)> finish) {
             election.Resign(std::move(finish));
           });
}

Status Election::Resign() {
  return sdk::AwaitStatus(core_.get(), "Election::Resign()",
                          [&](std::function<void(Status)> done) { Resign(std::move(done)); });
}

bool Election::IsLeader() const {
  bool out = false;
  sdk::Core* core = core_.get();
  (void)core_->Run([&] {
    client::Election* election = core->FindElection(handle_);
    client::Session* session = core->SessionOf(handle_);
    if (election != nullptr && session != nullptr) {
      out = election->IsLeader(session->lease().options().guarantee_ms);
    }
  });
  return out;
}

bool Election::IsLeader(std::int64_t window_ms) const {
  return core_->ReadElection(handle_, false, [window_ms](const client::Election& election) {
    return election.IsLeader(window_ms);
  });
}

std::uint64_t Election::FencingToken() const {
  return core_->ReadElection(handle_, std::uint64_t{0}, [](const client::Election& election) {
    return election.FencingToken();
  });
}

LeaderInfo Election::Leader() const {
  return core_->ReadElection(handle_, LeaderInfo{}, [](const client::Election& election) {
    return election.last_observed();
  });
}

void Election::Observe(std::function<void(const LeaderInfo&)> callback) {
  sdk::Core* core = core_.get();
  const std::uint64_t handle = handle_;
  core->Post([core, handle, callback = std::move(callback)]() mutable {
    if (client::Election* election = core->FindElection(handle)) {
      election->Observe(core->Guard(handle, std::move(callback)));
    }
  });
}

void Election::OnLost(LostCallback callback) {
  sdk::Core* core = core_.get();
  const std::uint64_t handle = handle_;
  core->Post([core, handle, callback = std::move(callback)]() mutable {
    if (client::Election* election = core->FindElection(handle)) {
      election->OnLost(core->Guard(handle, std::move(callback)));
    }
  });
}

Status Election::SetSettings(Settings settings) {
  return sdk::AwaitStatus(
      core_.get(), "Election::SetSettings", [&](std::function<void(Status)> done) {
        Dispatch(core_.get(), handle_, std::move(done),
                 [settings = std::move(settings)](client::Election& election,
                                                  std::function<void(Status)> finish) mutable {
                   election.SetSettings(std::move(settings), std::move(finish));
                 });
      });
}

Result<Settings> Election::GetSettings() {
  sdk::Core* core = core_.get();
  return sdk::Await<Settings>(
      core, "Election::GetSettings", [&](std::function<void(Result<Settings>)> done) {
        Dispatch(core, handle_, std::move(done),
                 [](client::Election& election, std::function<void(Result<Settings>)> finish) {
                   election.GetSettings(std::move(finish));
                 });
      });
}

std::string Election::LeaderKey() const { return options_.prefix + options_.name + "/leader"; }

}  // namespace tenure
