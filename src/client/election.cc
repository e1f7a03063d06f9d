// client::Election's campaign and leadership (client/election.h); the rest
// of it: election_watch.cc, election_resign.cc, election_settings.cc.
#include "client/election.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>

#include "client/election_impl.h"
#include "client/queue.h"
#include "client/registration.h"
#include "client/response.h"
#include "net/url.h"

namespace tenure::client {

namespace {

// Leaving the queue: how often ?release is sent while the server still
// lists us (its dequeue of the hung-up request is on its way), and how far
// apart.
constexpr int kLeaveAttempts = 10;
constexpr DurationMs kLeaveRetryMs = 200;

}  // namespace

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

BlockingGet Election::KvRead(const std::string& key, std::string_view query,
                             std::uint64_t index) const {
  std::string target = "/v1/kv/" + net::EscapeKeyPath(key);
  if (!query.empty()) target += "?" + std::string(query);
  return BlockingRead(std::move(target), index, options_.wait_ms);
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

void Election::After(int timer, DurationMs delay_ms, std::function<void()> then) {
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
          Grant(FenceOf(*result));
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
  BlockingGet read = KvRead(LeaderKey(), "", index);
  impl_->campaign_req =
      Send("GET", std::move(read.target), "", read.timeout_ms, {},
           [this, index](Result<net::ClientResponse> got) {
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
             impl_->retried_free = false;             // held by another: a later "free" is news
             auto next = NextWaitIndex(*got, index);  // 0: the index went backwards
             if (!next.ok()) {
               After(kCampaignTimer, options_.error_retry_ms, [this] { AttemptAcquire(); });
               return;
             }
             CampaignWait(*next);
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
         if (won) Grant(FenceOf(*result));
         done(won);
       });
}

bool Election::campaigning() const { return impl_->campaigning; }

void Election::StopCampaign() { FinishCampaign(Status::Unavailable("campaign stopped")); }

void Election::Cancel() {
  FinishCampaign(Status::Unavailable("campaign cancelled"));
  impl_->observer = nullptr;
  impl_->settings_cb = nullptr;
  impl_->Stop(session_.http(), kSettingsTimer, &impl_->settings_req);
  if (!holding_) {
    impl_->watching = false;
    impl_->Stop(session_.http(), kWatchTimer, &impl_->watch_req);
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

bool Election::IsLeader(MonoMs now_ms, DurationMs window_ms) const {
  return holding_ && !handing_over_ && observed_.session == session_.id() &&
         session_.Guaranteed(now_ms, window_ms);
}

bool Election::IsLeader(DurationMs window_ms) const { return IsLeader(SteadyNowMs(), window_ms); }

}  // namespace tenure::client
