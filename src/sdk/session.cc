// tenure::Session: a handle to a client::Session on the client's thread.
#include "tenure/session.h"

#include <utility>

#include "client/lease.h"
#include "sdk/core.h"

namespace tenure {

namespace {

client::SessionOptions Internal(const SessionOptions& options) {
  client::SessionOptions out;
  out.name = options.name;
  out.ttl_ms = options.ttl_ms;
  out.lock_delay_ms = options.lock_delay_ms;
  out.behavior = options.behavior;
  out.node = options.node;
  out.lease = client::LeaseOptions::ForTtl(options.ttl_ms);
  if (options.renew_interval_ms > 0) out.lease.renew_interval_ms = options.renew_interval_ms;
  if (options.guarantee_ms > 0) out.lease.guarantee_ms = options.guarantee_ms;
  out.lease.kill_grace_ms = out.lease.guarantee_ms / 2;  // tenure run's; unused here
  return out;
}

Status Gone() { return Status::FailedPrecondition("tenure: the session was destroyed"); }

}  // namespace

Session::Session(Client& client, SessionOptions options)
    : core_(client.core_), options_(std::move(options)) {
  sdk::Core* core = core_.get();
  (void)core_->Run([&] { handle_ = core->AddSession(); });
}

Session::~Session() {
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

void Session::Create(std::function<void(Status)> done) {
  sdk::Core* core = core_.get();
  auto run = [core, handle = handle_, options = Internal(options_), done]() mutable {
    client::Session* session = core->FindSession(handle);
    if (session == nullptr) {
      done(Gone());
      return;
    }
    if (!core->TakeCreate(handle)) {
      done(Status::FailedPrecondition("tenure: session create: called twice"));
      return;
    }
    session->Create(std::move(options),
                    [done = core->Guard(handle, std::move(done))](Result<std::string> id) {
                      done(id.ok() ? Status() : id.status());
                    });
  };
  if (!core->Post(std::move(run))) done(Status::Unavailable(sdk::kClosed));
}

Status Session::Create() {
  return sdk::AwaitStatus(core_.get(), "Session::Create()",
                          [this](std::function<void(Status)> done) { Create(std::move(done)); });
}

void Session::Destroy(std::function<void(Status)> done) {
  sdk::Core* core = core_.get();
  auto run = [core, handle = handle_, done]() mutable {
    client::Session* session = core->FindSession(handle);
    if (session == nullptr) {
      done(Gone());
      return;
    }
    session->Destroy(core->Guard(handle, std::move(done)));
  };
  if (!core->Post(std::move(run))) done(Status::Unavailable(sdk::kClosed));
}

Status Session::Destroy() {
  return sdk::AwaitStatus(core_.get(), "Session::Destroy()",
                          [this](std::function<void(Status)> done) { Destroy(std::move(done)); });
}

void Session::OnLost(LostCallback callback) {
  sdk::Core* core = core_.get();
  auto run = [core, handle = handle_, callback]() mutable {
    if (client::Session* session = core->FindSession(handle)) {
      session->OnLost(core->Guard(handle, std::move(callback)));
    }
  };
  core->Post(std::move(run));
}

std::string Session::id() const {
  return core_->ReadSession(handle_, std::string(),
                            [](const client::Session& session) { return session.id(); });
}

bool Session::alive() const {
  return core_->ReadSession(handle_, false,
                            [](const client::Session& session) { return session.alive(); });
}

bool Session::Guaranteed(std::int64_t window_ms) const {
  return core_->ReadSession(handle_, false, [window_ms](const client::Session& session) {
    return session.Guaranteed(window_ms);
  });
}

std::uint64_t Session::renewals() const {
  return core_->ReadSession(handle_, std::uint64_t{0},
                            [](const client::Session& session) { return session.renewals(); });
}

}  // namespace tenure
