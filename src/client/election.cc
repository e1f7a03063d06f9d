#include "client/election.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "client/kv_pair.h"
#include "client/queue.h"
#include "client/registration.h"
#include "common/base64.h"
#include "net/blocking_http_client.h"
#include "net/url.h"

namespace tenure::client {

namespace {

enum TimerId {
  kCampaignTimer = 0,
  kWatchTimer = 1,
  kSettingsTimer = 2,
  kLeaveTimer = 3,
  kTimers = 4
};

// Leaving the queue: how often ?release is sent while the server still
// lists us (its dequeue of the hung-up request is on its way), and how far
// apart.
constexpr int kLeaveAttempts = 10;
constexpr MonoMs kLeaveRetryMs = 200;

std::uint64_t ParseU64(std::string_view text) {
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  (void)ptr;
  return ec == std::errc() ? value : 0;
}

std::string Describe(const Result<net::ClientResponse>& result) {
  if (!result.ok()) return result.status().ToString();
  return "HTTP " + std::to_string(result->status) + ": " + result->body;
}

// A 403: the token may not do what the campaign needs (ACLs). Waiting
// would not change that, so the campaign ends with the server's text.
bool IsDenied(const Result<net::ClientResponse>& result) {
  return result.ok() && result->status == 403;
}

Status Denied(const std::string& key, const net::ClientResponse& response) {
  std::string body = response.body;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return Status::PermissionDenied("campaign for " + key + ": " + body);
}

bool IsInvalidSession(const Result<net::ClientResponse>& result) {
  return result.ok() && result->status == 500 &&
         result->body.find("invalid session") != std::string::npos;
}

// The first entry of a KV GET answer (200) or "no key" (404).
Result<LeaderInfo> ParseLeader(const net::ClientResponse& response) {
  LeaderInfo info;
  if (response.status == 404) return info;
  if (response.status != 200) {
    return Status::Unavailable("HTTP " + std::to_string(response.status) + ": " + response.body);
  }
  Result<std::vector<KvPair>> pairs = ParseKvPairs(response.body);
  if (!pairs.ok()) return pairs.status();
  if (pairs->empty()) return info;
  const KvPair& entry = pairs->front();
  info.exists = true;
  info.session = entry.session;
  info.value = entry.Value();
  info.fence = info.session.empty() ? 0 : entry.fence.value_or(0);
  info.modify_index = entry.modify_index;
  return info;
}

Result<Settings> ParseSettings(const net::ClientResponse& response, const std::string& prefix) {
  Settings settings;
  if (response.status == 404) return settings;
  if (response.status != 200) {
    return Status::Unavailable("HTTP " + std::to_string(response.status) + ": " + response.body);
  }
  Result<std::vector<KvPair>> pairs = ParseKvPairs(response.body);
  if (!pairs.ok()) return pairs.status();
  for (const KvPair& entry : *pairs) {
    if (entry.key.size() <= prefix.size() || entry.key.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    settings[entry.key.substr(prefix.size())] = entry.Value();
  }
  return settings;
}

// Errors[].What of a 409 txn answer, joined; `first_op_failed` tells
// whether operation 0 (the guard) is among them.
std::string TxnErrors(const std::string& body, bool* first_op_failed = nullptr) {
  std::string out;
  if (first_op_failed != nullptr) *first_op_failed = false;
  try {
    const nlohmann::json parsed = nlohmann::json::parse(body);
    for (const auto& error : parsed.at("Errors")) {
      if (!out.empty()) out += "; ";
      out += error.value("What", std::string());
      if (first_op_failed != nullptr && error.value("OpIndex", -1) == 0) *first_op_failed = true;
    }
  } catch (const std::exception&) {
    return body;
  }
  return out.empty() ? body : out;
}

// The next blocking index: X-Consul-Index, reset to 0 when it went backwards.
std::uint64_t NextIndex(const net::ClientResponse& response, std::uint64_t previous) {
  std::uint64_t index = ParseU64(response.Header("X-Consul-Index"));
  return index < previous ? 0 : index;
}

}  // namespace

struct Election::Impl {
  explicit Impl(boost::asio::io_context& io)
      : timers{boost::asio::steady_timer(io), boost::asio::steady_timer(io),
               boost::asio::steady_timer(io), boost::asio::steady_timer(io)} {}

  std::shared_ptr<char> life = std::make_shared<char>(0);
  boost::asio::steady_timer timers[kTimers];
  net::RequestId campaign_req = 0, watch_req = 0, settings_req = 0;

  bool campaigning = false;
  std::uint64_t campaigns = 0;  // Campaign() calls: tells a stopped campaign's answers apart
  bool swept = false;           // dead registrations deleted (once per Election)
  bool retried_free = false;    // the immediate retry after "refused, then free" was made
  // A queued acquire was sent and no answer since said we are out of the
  // key's queue: stopping the campaign must leave it.
  bool queued = false;
  bool leaving = false;              // LeaveQueue's requests are running
  bool acquire_after_leave = false;  // a new campaign waits for them
  std::function<void(Status)> campaign_done;
  std::string value;  // our description (campaign value)

  bool watching = false;  // a watch request or retry timer is pending
  std::uint64_t watch_index = 0;
  std::function<void(const LeaderInfo&)> observer;
  bool reported = false;
  LeaderInfo last_reported;

  std::function<void(const Settings&)> settings_cb;
  std::uint64_t settings_index = 0;
  bool settings_reported = false;
  Settings last_settings;

  std::vector<LostCallback> lost;
};

Election::Election(Session& session, ElectionOptions options)
    : impl_(std::make_unique<Impl>(session.io())), session_(session), options_(std::move(options)) {
  std::weak_ptr<char> life = impl_->life;
  session_.OnLost([this, life](const Status& why) {
    if (!life.expired()) SessionLost(why);
  });
}

Election::~Election() {
  impl_->life.reset();
  for (auto& timer : impl_->timers) timer.cancel();
  for (net::RequestId id : {impl_->campaign_req, impl_->watch_req, impl_->settings_req}) {
    if (id != 0) session_.http().Cancel(id);
  }
}

std::string Election::LeaderKey() const { return options_.prefix + options_.name + "/leader"; }
std::string Election::CandidateKey(const std::string& candidate) const {
  return options_.prefix + options_.name + "/candidates/" + candidate;
}
std::string Election::OwnCandidate() const {
  return options_.candidate.empty() ? session_.id() : options_.candidate;
}
std::string Election::SettingsPrefix() const {
  return options_.prefix + options_.name + "/settings/";
}

// GET of a key (with `query`, e.g. "recurse") that blocks past `index` when
// it is > 0. The timeout covers the server's wait, its jitter (< wait/16) and
// some slack; 0 means the client's default for an immediate read.
std::pair<std::string, std::int64_t> Election::BlockingRead(const std::string& key,
                                                            std::string_view query,
                                                            std::uint64_t index) const {
  std::string target = "/v1/kv/" + net::EscapeKeyPath(key);
  std::string params(query);
  std::int64_t timeout = 0;
  if (index > 0) {
    params += (params.empty() ? "" : "&") + std::string("index=") + std::to_string(index) +
              "&wait=" + std::to_string(options_.wait_ms) + "ms";
    timeout = options_.wait_ms + options_.wait_ms / 16 + 5'000;
  }
  if (!params.empty()) target += "?" + params;
  return {std::move(target), timeout};
}

// PUT <key>?acquire=<own session> with the election's value; `queued` adds
// &queue&wait= (the fair acquire), whose answer may take up to the wait. A
// session the server no longer knows is lost: the listeners run and `next`
// is not called.
net::RequestId Election::SendAcquire(const std::string& key, bool queued,
                                     std::function<void(Result<net::ClientResponse>)> next) {
  std::string target =
      "/v1/kv/" + net::EscapeKeyPath(key) + "?acquire=" + net::EscapeQueryValue(session_.id());
  std::int64_t timeout = 0;
  if (queued) {
    target += "&queue&wait=" + std::to_string(options_.queue_wait_ms) + "ms";
    timeout = options_.queue_wait_ms + options_.queue_wait_ms / 16 + 5'000;
  }
  return Send("PUT", std::move(target), impl_->value, timeout, {},
              [this, next = std::move(next)](Result<net::ClientResponse> result) {
                if (IsInvalidSession(result)) {
                  session_.NotifyLost(
                      Status::NotFound("session " + session_.id() + " is gone: " + result->body));
                  return;
                }
                next(std::move(result));
              });
}

net::RequestId Election::Send(std::string method, std::string target, std::string body,
                              std::int64_t timeout_ms, net::RetryPolicy retry,
                              ResponseCallback done) {
  std::weak_ptr<char> life = impl_->life;
  net::HttpCall call{std::move(method), std::move(target), std::move(body), timeout_ms, retry};
  return session_.http().Request(
      std::move(call), [life, done = std::move(done)](Result<net::ClientResponse> result) {
        if (!life.expired()) done(std::move(result));
      });
}

void Election::After(int timer, MonoMs delay_ms, std::function<void()> then) {
  std::weak_ptr<char> life = impl_->life;
  auto& t = impl_->timers[timer];
  t.expires_after(std::chrono::milliseconds(delay_ms));
  t.async_wait([life, then = std::move(then)](const boost::system::error_code& ec) {
    if (!ec && !life.expired()) then();
  });
}

// ---- campaign --------------------------------------------------------------

void Election::Campaign(std::string value, std::function<void(Status)> done) {
  TENURE_ASSERT(!impl_->campaigning);
  if (!session_.alive()) {
    boost::asio::post(session_.io(), [done = std::move(done)]() {
      done(Status::FailedPrecondition("campaign: the session is not alive"));
    });
    return;
  }
  impl_->campaigning = true;
  ++impl_->campaigns;
  impl_->campaign_done = std::move(done);
  impl_->value = std::move(value);
  if (holding_) {  // already leading: nothing to do
    FinishCampaign(Status());
    return;
  }
  RegisterCandidate();
}

void Election::RegisterCandidate() {
  const std::string candidate = OwnCandidate();
  const std::string key = CandidateKey(candidate);
  impl_->campaign_req =
      SendAcquire(key, false, [this, key, candidate](Result<net::ClientResponse> result) {
        impl_->campaign_req = 0;
        if (!impl_->campaigning) return;
        if (result.ok() && result->status == 200 &&
            result->body.find("true") != std::string::npos) {
          SweepThenAcquire();
          return;
        }
        if (IsDenied(result)) {
          FinishCampaign(Denied(key, *result));
          return;
        }
        if (result.ok() && result->status == 200) {
          // Refused: held by another session, or lock-delay. Look.
          impl_->campaign_req =
              Send("GET", "/v1/kv/" + net::EscapeKeyPath(key), "", 0, {},
                   [this, candidate](Result<net::ClientResponse> got) {
                     impl_->campaign_req = 0;
                     if (!impl_->campaigning) return;
                     auto info = got.ok() ? ParseLeader(*got) : Result<LeaderInfo>(got.status());
                     if (info.ok() && info->has_leader() && info->session != session_.id()) {
                       FinishCampaign(Status::FailedPrecondition(
                           "campaign: candidate name \"" + candidate +
                           "\" is registered by another session (" + info->session + ")"));
                       return;
                     }
                     After(kCampaignTimer, options_.lock_retry_ms, [this] { RegisterCandidate(); });
                   });
          return;
        }
        After(kCampaignTimer, options_.error_retry_ms, [this] { RegisterCandidate(); });
      });
}

// The first registration of this Election deletes the registrations whose
// candidates died (client/registration.h) before it acquires; a failure
// there (a token that may not read the prefix) does not stop the campaign.
void Election::SweepThenAcquire() {
  if (impl_->swept) {
    AttemptAcquire();
    return;
  }
  impl_->swept = true;
  std::weak_ptr<char> life = impl_->life;
  const std::uint64_t campaign = impl_->campaigns;
  SweepDeadRegistrations(
      session_.http(), options_.prefix + options_.name + "/candidates/",
      [this, life, campaign](Status) {
        if (life.expired() || !impl_->campaigning || impl_->campaigns != campaign) {
          return;
        }
        AttemptAcquire();
      });
}

void Election::AttemptAcquire() {
  if (impl_->leaving) {
    // An earlier campaign's LeaveQueue is still releasing: its last release
    // must not end this campaign's grant. EndLeave resumes.
    impl_->acquire_after_leave = true;
    return;
  }
  const bool fair = options_.fair_queue;
  if (fair) impl_->queued = true;
  impl_->campaign_req =
      SendAcquire(LeaderKey(), fair, [this, fair](Result<net::ClientResponse> result) {
        impl_->campaign_req = 0;
        if (!impl_->campaigning) return;
        if (IsDenied(result)) {
          impl_->queued = false;
          FinishCampaign(Denied(LeaderKey(), *result));
          return;
        }
        if (!result.ok() || result->status != 200) {
          // A 500 (the server stopped leading) or a lost connection: send it
          // again after the back-off; re-enqueueing keeps our place while the
          // session lives.
          After(kCampaignTimer, options_.error_retry_ms, [this] { AttemptAcquire(); });
          return;
        }
        if (result->body.find("true") != std::string::npos) {
          impl_->queued = false;
          Grant(ParseU64(result->Header("X-Tenure-Fence")));
          FinishCampaign(Status());
          return;
        }
        if (fair && !result->Header(kQueuePositionHeader).empty()) {
          AttemptAcquire();  // the wait ran out; the place is kept
          return;
        }
        // A plain `false`: Consul, a server with -fair-queue=false, or one
        // that dequeued us when the wait ran out. Consul's way from here.
        impl_->queued = false;
        CampaignWait(0);
      });
}

// index 0: the immediate look after a refused acquire; > 0: a blocking wait.
void Election::CampaignWait(std::uint64_t index) {
  const auto [target, timeout] = BlockingRead(LeaderKey(), "", index);
  impl_->campaign_req =
      Send("GET", target, "", timeout, {}, [this, index](Result<net::ClientResponse> got) {
        impl_->campaign_req = 0;
        if (!impl_->campaigning) return;
        if (IsDenied(got)) {
          FinishCampaign(Denied(LeaderKey(), *got));
          return;
        }
        auto info = got.ok() ? ParseLeader(*got) : Result<LeaderInfo>(got.status());
        if (!info.ok()) {
          After(kCampaignTimer, options_.error_retry_ms, [this] { AttemptAcquire(); });
          return;
        }
        if (info->has_leader() && info->session == session_.id()) {
          // Handed to us (ResignTo) or our own earlier grant.
          Grant(info->fence);
          FinishCampaign(Status());
          return;
        }
        if (!info->has_leader()) {
          if (index == 0 && !impl_->retried_free) {
            // Refused, then free: released in between, or lock-delay. Try once
            // more at once (a release), then back off (lock-delay).
            impl_->retried_free = true;
            AttemptAcquire();
          } else if (index == 0) {
            After(kCampaignTimer, options_.lock_retry_ms, [this] { AttemptAcquire(); });
          } else {
            AttemptAcquire();
          }
          return;
        }
        impl_->retried_free = false;  // held by another: a later "free" is news
        std::uint64_t next = NextIndex(*got, index);
        if (next == 0) next = 1;  // still block: the key is held
        CampaignWait(next);
      });
}

void Election::FinishCampaign(Status status) {
  if (!impl_->campaigning) return;
  impl_->campaigning = false;
  impl_->retried_free = false;
  impl_->timers[kCampaignTimer].cancel();
  if (impl_->campaign_req != 0) {
    // Cancelling closes the connection: a parked queued acquire is hung up,
    // which makes the server dequeue it.
    net::RequestId id = impl_->campaign_req;
    impl_->campaign_req = 0;
    session_.http().Cancel(id);
  }
  if (impl_->queued) {
    impl_->queued = false;
    // A lost session left every queue with its destroy; otherwise leave.
    if (session_.alive() && !holding_) LeaveQueue(0);
  }
  auto done = std::move(impl_->campaign_done);
  impl_->campaign_done = nullptr;
  if (done) done(std::move(status));
}

// Leaves the leader key's queue after a campaign stopped while queued:
// ?release (a waiting session's release takes it out of the queue; from a
// non-holder it is a harmless false on Consul and older servers), repeated
// while GET /v1/tenure/queue still lists us (the hung-up request's dequeue is
// still on its way), then one last ?release: a grant that committed before
// we left is released, never kept by nobody. Not holding_ throughout.
void Election::LeaveQueue(int attempt) {
  impl_->leaving = true;
  const std::string release = "/v1/kv/" + net::EscapeKeyPath(LeaderKey()) +
                              "?release=" + net::EscapeQueryValue(session_.id());
  Send("PUT", release, impl_->value, 0, {}, [this, attempt, release](Result<net::ClientResponse>) {
    if (!session_.alive()) return EndLeave();
    Send("GET", "/v1/tenure/queue/" + net::EscapeKeyPath(LeaderKey()), "", 0, {},
         [this, attempt, release](Result<net::ClientResponse> got) {
           bool listed = false;
           if (got.ok() && got->status == 200) {
             auto queue = ParseQueue(got->body);
             listed = queue.ok() && InQueue(*queue, session_.id());
           }
           if (listed && attempt + 1 < kLeaveAttempts && session_.alive()) {
             After(kLeaveTimer, kLeaveRetryMs, [this, attempt] { LeaveQueue(attempt + 1); });
             return;
           }
           Send("PUT", release, impl_->value, 0, {},
                [this](Result<net::ClientResponse>) { EndLeave(); });
         });
  });
}

void Election::EndLeave() {
  impl_->leaving = false;
  if (impl_->acquire_after_leave) {
    impl_->acquire_after_leave = false;
    if (impl_->campaigning && !holding_) AttemptAcquire();
  }
}

void Election::TryOnce(std::string value, std::function<void(Result<bool>)> done) {
  if (!session_.alive()) {
    boost::asio::post(session_.io(), [done = std::move(done)]() {
      done(Status::FailedPrecondition("try-once: the session is not alive"));
    });
    return;
  }
  impl_->value = std::move(value);
  Send("PUT",
       "/v1/kv/" + net::EscapeKeyPath(LeaderKey()) +
           "?acquire=" + net::EscapeQueryValue(session_.id()),
       impl_->value, 0, {}, [this, done = std::move(done)](Result<net::ClientResponse> result) {
         if (IsInvalidSession(result)) {
           Status why = Status::NotFound("session " + session_.id() + " is gone: " + result->body);
           session_.NotifyLost(why);
           done(why);
           return;
         }
         if (!result.ok() || result->status != 200) {
           done(Status::Unavailable("try-once: " + Describe(result)));
           return;
         }
         bool won = result->body.find("true") != std::string::npos;
         if (won) Grant(ParseU64(result->Header("X-Tenure-Fence")));
         done(won);
       });
}

bool Election::campaigning() const { return impl_->campaigning; }

void Election::StopCampaign() { FinishCampaign(Status::Unavailable("campaign stopped")); }

void Election::Cancel() {
  FinishCampaign(Status::Unavailable("campaign cancelled"));
  impl_->observer = nullptr;
  impl_->settings_cb = nullptr;
  impl_->timers[kSettingsTimer].cancel();
  if (impl_->settings_req != 0) {
    net::RequestId id = impl_->settings_req;
    impl_->settings_req = 0;
    session_.http().Cancel(id);
  }
  if (!holding_) {
    impl_->timers[kWatchTimer].cancel();
    impl_->watching = false;
    if (impl_->watch_req != 0) {
      net::RequestId id = impl_->watch_req;
      impl_->watch_req = 0;
      session_.http().Cancel(id);
    }
  }
}

// ---- leadership --------------------------------------------------------------

void Election::Grant(std::uint64_t fence) {
  holding_ = true;
  fence_ = fence;
  observed_.exists = true;
  observed_.session = session_.id();
  observed_.value = impl_->value;
  observed_.fence = fence;
  EnsureWatch();
}

void Election::StopLeading() {
  holding_ = false;
  fence_ = 0;
}

void Election::Lose(const Status& why) {
  if (!holding_) return;
  StopLeading();
  std::weak_ptr<char> life = impl_->life;
  auto listeners = impl_->lost;  // copy: they stay for later grants
  for (auto& listener : listeners) {
    if (life.expired()) return;
    listener(why);
  }
}

void Election::SessionLost(const Status& why) {
  Status status = why.Annotate("session lost");
  Lose(status);
  FinishCampaign(Status::FailedPrecondition("campaign aborted: " + status.ToString()));
}

void Election::OnLost(LostCallback callback) { impl_->lost.push_back(std::move(callback)); }

bool Election::IsLeader(MonoMs now_ms, MonoMs window_ms) const {
  return holding_ && !handing_over_ && observed_.session == session_.id() &&
         session_.Guaranteed(now_ms, window_ms);
}

bool Election::IsLeader(MonoMs window_ms) const { return IsLeader(SteadyNowMs(), window_ms); }

void Election::Resign(std::function<void(Status)> done) {
  if (!holding_) {
    boost::asio::post(session_.io(), [done = std::move(done)]() {
      done(Status::FailedPrecondition("resign: not the leader"));
    });
    return;
  }
  Release(std::move(done));
}

void Election::Release(std::function<void(Status)> done) {
  StopLeading();
  Send("PUT",
       "/v1/kv/" + net::EscapeKeyPath(LeaderKey()) +
           "?release=" + net::EscapeQueryValue(session_.id()),
       impl_->value, 0, {}, [done = std::move(done)](Result<net::ClientResponse> result) {
         if (!result.ok() || result->status != 200) {
           done(Status::Unavailable("resign: " + Describe(result)));
         } else if (result->body.find("true") == std::string::npos) {
           done(Status::FailedPrecondition("resign: the key was no longer held by this session"));
         } else {
           done(Status());
         }
       });
}

void Election::Unregister(std::function<void(Status)> done) {
  std::weak_ptr<char> life = impl_->life;
  DeleteOwnRegistration(session_.http(), CandidateKey(OwnCandidate()), session_.id(),
                        [life, done = std::move(done)](Status status) {
                          if (!life.expired()) done(std::move(status));
                        });
}

void Election::ResignTo(std::string candidate, std::function<void(Status)> done) {
  if (!holding_) {
    boost::asio::post(session_.io(), [done = std::move(done)]() {
      done(Status::FailedPrecondition("resign: not the leader"));
    });
    return;
  }
  if (!options_.candidate.empty() && candidate == options_.candidate) {
    boost::asio::post(session_.io(), [done = std::move(done), candidate]() {
      done(Status::FailedPrecondition("resign to " + candidate + ": that is this candidate"));
    });
    return;
  }
  const std::string candidate_key = CandidateKey(candidate);
  Send("GET", "/v1/kv/" + net::EscapeKeyPath(candidate_key), "", 0, {},
       [this, candidate, candidate_key,
        done = std::move(done)](Result<net::ClientResponse> got) mutable {
         auto info = got.ok() ? ParseLeader(*got) : Result<LeaderInfo>(got.status());
         if (!info.ok()) {
           done(info.status().Annotate("resign to " + candidate));
           return;
         }
         if (!info->exists) {
           done(Status::FailedPrecondition("resign to " + candidate + ": candidate \"" + candidate +
                                           "\" is not registered"));
           return;
         }
         if (!info->has_leader()) {
           done(Status::FailedPrecondition("resign to " + candidate + ": candidate \"" + candidate +
                                           "\" is not alive (its session is gone)"));
           return;
         }
         if (!holding_) {
           done(Status::FailedPrecondition("resign: not the leader"));
           return;
         }
         HandTo(candidate, candidate_key, *info, std::move(done));
       });
}

// The fair queue (decision 0027) lets nobody jump it, but the holder may
// choose its successor among the waiters (the 2026-11-27 second addendum):
// one txn [check-session, unlock by us, lock for the candidate] hands the
// key to the candidate wherever it stands in the line, the others keeping
// their order. A registered candidate that does not wait while others do
// would jump the line: refused here with a clear error (the server would
// refuse the txn as well).
void Election::HandTo(std::string candidate, std::string candidate_key, LeaderInfo target,
                      std::function<void(Status)> done) {
  Send(
      "GET", "/v1/tenure/queue/" + net::EscapeKeyPath(LeaderKey()), "", 0, {},
      [this, candidate, candidate_key, target,
       done = std::move(done)](Result<net::ClientResponse> got) mutable {
        std::vector<QueueWaiter> queue;
        if (got.ok() && got->status == 200) {
          auto parsed = ParseQueue(got->body);
          if (parsed.ok()) queue = std::move(*parsed);
        }
        if (!holding_) {
          done(Status::FailedPrecondition("resign: not the leader"));
          return;
        }
        const bool waits = std::any_of(queue.begin(), queue.end(), [&](const QueueWaiter& w) {
          return w.session == target.session;
        });
        if (!queue.empty() && !waits) {
          done(Status::FailedPrecondition(
              "resign to " + candidate + ": candidates wait in the leader key's fair queue and \"" +
              candidate + "\" (session " + target.session +
              ") is not one of them; resign without -to hands the key to the next in line"));
          return;
        }
        const LeaderInfo* info = &target;
        nlohmann::json ops = nlohmann::json::array();
        ops.push_back(
            {{"KV",
              {{"Verb", "check-session"}, {"Key", candidate_key}, {"Session", info->session}}}});
        ops.push_back(
            {{"KV", {{"Verb", "unlock"}, {"Key", LeaderKey()}, {"Session", session_.id()}}}});
        ops.push_back({{"KV",
                        {{"Verb", "lock"},
                         {"Key", LeaderKey()},
                         {"Value", Base64Encode(info->value)},
                         {"Session", info->session}}}});
        handing_over_ = true;
        Send("PUT", "/v1/txn", ops.dump(), 0, net::RetryPolicy::None(),
             [this, candidate, done = std::move(done)](Result<net::ClientResponse> result) {
               handing_over_ = false;
               if (result.ok() && result->status == 200) {
                 StopLeading();
                 done(Status());
               } else if (result.ok() && result->status == 409) {
                 done(Status::FailedPrecondition("resign to " + candidate +
                                                 " refused: " + TxnErrors(result->body)));
               } else {
                 // Maybe applied: stop claiming the key, as Resign does. If
                 // it is still ours, a campaign finds it held by our session.
                 StopLeading();
                 done(Status::Unavailable("resign to " + candidate + ": " + Describe(result)));
               }
             });
      });
}

// ---- the leader-key watch ------------------------------------------------------

void Election::Observe(std::function<void(const LeaderInfo&)> callback) {
  impl_->observer = std::move(callback);
  impl_->reported = false;
  if (impl_->watching) {
    // Report the current state at once; the running watch reports changes.
    // Restart from index 0 so the first report is fresh.
    impl_->watch_index = 0;
    impl_->timers[kWatchTimer].cancel();
    if (impl_->watch_req != 0) {
      net::RequestId id = impl_->watch_req;
      impl_->watch_req = 0;
      session_.http().Cancel(id);
    }
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
  const auto [target, timeout] = BlockingRead(LeaderKey(), "", index);
  impl_->watch_req =
      Send("GET", target, "", timeout, {}, [this, index](Result<net::ClientResponse> got) {
        impl_->watch_req = 0;
        auto info = got.ok() ? ParseLeader(*got) : Result<LeaderInfo>(got.status());
        if (!info.ok()) {
          // Not a loss: the lease arithmetic covers transient errors.
          After(kWatchTimer, options_.error_retry_ms, [this] { WatchOnce(); });
          return;
        }
        std::uint64_t seen = ParseU64(got->Header("X-Consul-Index"));
        impl_->watch_index = NextIndex(*got, index);
        HandleObservation(*info, seen);
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

// ---- settings ------------------------------------------------------------------

void Election::SetSettings(Settings settings, std::function<void(Status)> done) {
  if (!holding_) {
    boost::asio::post(session_.io(), [done = std::move(done), key = LeaderKey()]() {
      done(Status::FailedPrecondition("not the leader: this candidate does not hold " + key));
    });
    return;
  }
  nlohmann::json ops = nlohmann::json::array();
  // The guard: our grant's fencing token on tenure; a real Consul has no
  // fence, so there the key must still be locked by our session.
  if (fence_ != 0) {
    ops.push_back({{"KV", {{"Verb", "check-fence"}, {"Key", LeaderKey()}, {"Index", fence_}}}});
  } else {
    ops.push_back(
        {{"KV", {{"Verb", "check-session"}, {"Key", LeaderKey()}, {"Session", session_.id()}}}});
  }
  for (const auto& [key, value] : settings) {
    if (value.empty()) {
      ops.push_back({{"KV", {{"Verb", "delete"}, {"Key", SettingsPrefix() + key}}}});
    } else {
      ops.push_back(
          {{"KV",
            {{"Verb", "set"}, {"Key", SettingsPrefix() + key}, {"Value", Base64Encode(value)}}}});
    }
  }
  Send("PUT", "/v1/txn", ops.dump(), 0, {},
       [done = std::move(done)](Result<net::ClientResponse> result) {
         if (result.ok() && result->status == 200) {
           done(Status());
         } else if (result.ok() && result->status == 409) {
           bool guard_failed = false;
           std::string errors = TxnErrors(result->body, &guard_failed);
           if (guard_failed) {
             done(Status::FailedPrecondition("not the leader: " + errors));
           } else {
             done(Status::Conflict("leader settings: " + errors));
           }
         } else {
           done(Status::Unavailable("leader settings: " + Describe(result)));
         }
       });
}

void Election::GetSettings(std::function<void(Result<Settings>)> done) {
  Send("GET", "/v1/kv/" + net::EscapeKeyPath(SettingsPrefix()) + "?recurse", "", 0, {},
       [this, done = std::move(done)](Result<net::ClientResponse> got) {
         if (!got.ok()) {
           done(got.status().Annotate("leader settings"));
           return;
         }
         done(ParseSettings(*got, SettingsPrefix()));
       });
}

void Election::WatchSettings(std::function<void(const Settings&)> callback) {
  impl_->settings_cb = std::move(callback);
  impl_->settings_reported = false;
  impl_->settings_index = 0;
  impl_->timers[kSettingsTimer].cancel();
  if (impl_->settings_req != 0) {
    net::RequestId id = impl_->settings_req;
    impl_->settings_req = 0;
    session_.http().Cancel(id);
  }
  SettingsOnce();
}

void Election::SettingsOnce() {
  if (!impl_->settings_cb) return;
  const std::uint64_t index = impl_->settings_index;
  const auto [target, timeout] = BlockingRead(SettingsPrefix(), "recurse", index);
  impl_->settings_req =
      Send("GET", target, "", timeout, {}, [this, index](Result<net::ClientResponse> got) {
        impl_->settings_req = 0;
        auto settings =
            got.ok() ? ParseSettings(*got, SettingsPrefix()) : Result<Settings>(got.status());
        if (!settings.ok()) {
          After(kSettingsTimer, options_.error_retry_ms, [this] { SettingsOnce(); });
          return;
        }
        impl_->settings_index = NextIndex(*got, index);
        if (impl_->settings_cb &&
            (!impl_->settings_reported || *settings != impl_->last_settings)) {
          impl_->settings_reported = true;
          impl_->last_settings = *settings;
          auto callback = impl_->settings_cb;
          callback(impl_->last_settings);
        }
        SettingsOnce();
      });
}

}  // namespace tenure::client
