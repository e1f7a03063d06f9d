#include "sdk/core.h"

#include <pthread.h>
#include <signal.h>

#include <boost/asio/post.hpp>

#include "client/settings.h"
#include "common/strings.h"

namespace tenure::sdk {

namespace {

net::HttpClientOptions HttpOptions(const ClientOptions& options) {
  net::HttpClientOptions http;
  for (const std::string& address : options.addresses) {
    for (std::string& one : SplitNonEmpty(address, ',')) http.addresses.push_back(std::move(one));
  }
  if (http.addresses.empty()) http.addresses = SplitNonEmpty(client::ResolveHttpAddress(""), ',');
  // As the CLI resolves it, files named by $TENURE_HTTP_TOKEN_FILE and
  // $CONSUL_HTTP_TOKEN_FILE included; a token file that cannot be read
  // fails every call with the reason (as a bad address does).
  Result<std::string> token = client::ResolveToken(options.token);
  if (token.ok()) {
    http.token = std::move(token).value();
  } else {
    http.settings_status = token.status();
  }
  client::TlsChoices given{options.ca_file,         options.client_cert_file,
                           options.client_key_file, options.tls_server_name,
                           options.tls_verify,      options.https};
  Result<net::TlsOptions> tls = client::ResolveTls(given);
  if (tls.ok()) {
    http.tls = std::move(tls).value();
  } else if (http.settings_status.ok()) {
    http.settings_status = tls.status();
  }
  http.connect_timeout_ms = options.connect_timeout_ms;
  http.default_timeout_ms = options.request_timeout_ms;
  return http;
}

}  // namespace

Status BlockingOnLoop(const char* what) {
  return Status::FailedPrecondition(std::string("tenure: ") + what +
                                    " blocks, and was called on the client's thread (in a "
                                    "callback): use its form with a callback there");
}

Core::Core(const ClientOptions& options)
    : http_options_(HttpOptions(options)),
      work_(boost::asio::make_work_guard(io_)),
      http_(std::make_unique<net::HttpClient>(io_, http_options_)) {
  // The thread starts with every signal blocked: the process's signals are
  // the application's, for its own threads.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  thread_ = std::thread([this] { io_.run(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  loop_id_ = thread_.get_id();
}

Core::~Core() {
  Close();
  http_.reset();  // the loop has stopped: no callback can run any more
}

void Core::Close() {
  TENURE_ASSERT(!OnLoopThread());  // a Client destroyed in its own callback
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    // Queued behind every call already posted: they run first.
    boost::asio::post(io_, [this] { Teardown(); });
  }
  thread_.join();
}

void Core::Teardown() {
  // Elections before their sessions, then every request still in flight.
  elections_.clear();
  sessions_.clear();
  http_->Shutdown();
  work_.reset();  // run() returns once the cancelled operations are done
}

bool Core::Post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  boost::asio::post(io_, std::move(fn));
  return true;
}

Status Core::Run(const std::function<void()>& fn) {
  if (OnLoopThread()) {
    fn();
    return Status();
  }
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> answer = done->get_future();
  if (!Post([&fn, done] {
        fn();
        done->set_value(Status());
      })) {
    return Status::Unavailable(kClosed);
  }
  return Wait(answer);
}

Status Core::Wait(std::future<Status>& answer) {
  try {
    return answer.get();
  } catch (const std::future_error&) {
    return Status::Unavailable(kDropped);
  }
}

std::uint64_t Core::AddSession() {
  const std::uint64_t handle = next_handle_++;
  sessions_[handle].session = std::make_unique<client::Session>(io_, *http_);
  return handle;
}

std::uint64_t Core::AddElection(std::uint64_t session, const ElectionOptions& options) {
  client::Session* owner = FindSession(session);
  if (owner == nullptr) return 0;
  const std::uint64_t handle = next_handle_++;
  ElectionEntry& entry = elections_[handle];
  entry.session = session;
  entry.election = std::make_unique<client::Election>(*owner, options);
  return handle;
}

std::shared_ptr<bool> Core::Live(std::uint64_t handle) {
  if (auto it = sessions_.find(handle); it != sessions_.end()) return it->second.live;
  if (auto it = elections_.find(handle); it != elections_.end()) return it->second.live;
  return std::make_shared<bool>(false);
}

void Core::Retire(std::uint64_t handle) {
  *Live(handle) = false;
  if (sessions_.count(handle) == 0) return;
  for (auto& [id, entry] : elections_) {
    if (entry.session == handle) *entry.live = false;
  }
}

void Core::Remove(std::uint64_t handle) {
  if (elections_.erase(handle) > 0) return;
  if (sessions_.count(handle) == 0) return;
  for (auto it = elections_.begin(); it != elections_.end();) {
    it = it->second.session == handle ? elections_.erase(it) : std::next(it);
  }
  sessions_.erase(handle);
}

client::Session* Core::FindSession(std::uint64_t handle) {
  auto it = sessions_.find(handle);
  return it == sessions_.end() ? nullptr : it->second.session.get();
}

client::Election* Core::FindElection(std::uint64_t handle) {
  auto it = elections_.find(handle);
  return it == elections_.end() ? nullptr : it->second.election.get();
}

client::Session* Core::SessionOf(std::uint64_t election) {
  auto it = elections_.find(election);
  return it == elections_.end() ? nullptr : FindSession(it->second.session);
}

bool Core::TakeCreate(std::uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end() || it->second.create_called) return false;
  it->second.create_called = true;
  return true;
}

}  // namespace tenure::sdk
