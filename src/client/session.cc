#include "client/session.h"

#include <time.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>
#include <vector>

#include "client/response.h"
#include "net/blocking_http_client.h"
#include "net/url.h"

namespace tenure::client {

// CLOCK_BOOTTIME, not CLOCK_MONOTONIC: it keeps counting while the machine
// is suspended, and the server's clock does too. A lease judged by a clock
// that stops during a suspend would look longer than it is
// (docs/decisions/0007-lease-clock.md).
MonoMs SteadyNowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return MonoMs(static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000);
}

namespace {

// Go duration string for milliseconds: "10s" or "1500ms".
std::string GoDuration(DurationMs ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// splitmix64 -> [0, 1): the renewal jitter.
double NextUnit(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

// The renewal timer, and the renew attempts in flight. An attempt that gets
// no answer does not hold the next one back: r after each attempt is sent,
// another goes whatever became of the earlier ones (still waiting, failed),
// until one succeeds. So an attempt the network swallowed costs r, like a
// refused one, not the whole renew_timeout_ms (3 s of a 10 s TTL's 3.1 s
// slack, docs/leadership.md). Attempts end at renew_timeout_ms; at most
// kMaxRenewAttempts overlap (starting one more cancels the oldest, whose
// send time, and so its proof, is the weakest).
constexpr std::size_t kMaxRenewAttempts = 3;

struct Session::Timer {
  explicit Timer(boost::asio::io_context& io) : timer(io) {}
  // Cancels every renew attempt in flight (their callbacks run now and
  // ignore the cancellation).
  void CancelRenewals(net::HttpClient& http) {
    for (net::RequestId id : std::exchange(renewing, {})) http.Cancel(id);
  }
  boost::asio::steady_timer timer;
  std::vector<net::RequestId> renewing;
};

Session::Session(boost::asio::io_context& io, net::HttpClient& http)
    : io_(io),
      http_(&http),
      timer_(std::make_unique<Timer>(io)),
      jitter_state_(std::random_device{}()) {}

Session::Session(boost::asio::io_context& io, net::HttpClientOptions options)
    : io_(io),
      owned_http_(std::make_unique<net::HttpClient>(io, std::move(options))),
      http_(owned_http_.get()),
      timer_(std::make_unique<Timer>(io)),
      jitter_state_(std::random_device{}()) {}

Session::~Session() {
  life_.reset();  // callbacks that run from here on see a dead session
  timer_->timer.cancel();
  if (inflight_ != 0) http_->Cancel(inflight_);
  timer_->CancelRenewals(*http_);
}

void Session::Create(SessionOptions options, std::function<void(Result<std::string>)> done) {
  TENURE_ASSERT(!created());
  TENURE_ASSERT(inflight_ == 0);
  if (options.lease.ttl_ms != options.ttl_ms) {
    options.lease = LeaseOptions::ForTtl(options.ttl_ms);
  }
  options_ = std::move(options);
  lease_ = Lease(options_.lease);
  if (Status valid = ValidateLeaseOptions(options_.lease); !valid.ok()) {
    boost::asio::post(io_, [done = std::move(done), valid]() { done(valid); });
    return;
  }
  nlohmann::json body = {{"Name", options_.name},
                         {"TTL", GoDuration(options_.ttl_ms)},
                         {"LockDelay", GoDuration(options_.lock_delay_ms)},
                         {"Behavior", options_.behavior},
                         {"Checks", nlohmann::json::array()}};
  if (!options_.node.empty()) body["Node"] = options_.node;
  const MonoMs sent = SteadyNowMs();
  std::weak_ptr<char> life = life_;
  net::HttpCall call{"PUT", "/v1/session/create", body.dump(), 0, {}};
  inflight_ = http_->Request(std::move(call), [this, life, sent, done = std::move(done)](
                                                  Result<net::ClientResponse> result) {
    if (life.expired()) return;
    inflight_ = 0;
    if (!result.ok() || result->status != 200) {
      done(Status::Unavailable("session create: " + Describe(result)));
      return;
    }
    std::string id;
    try {
      id = nlohmann::json::parse(result->body).at("ID").get<std::string>();
    } catch (const std::exception& e) {
      done(Status::Internal(std::string("session create: bad answer: ") + e.what()));
      return;
    }
    id_ = id;
    lease_.Renewed(sent);
    ScheduleRenew(lease_.NextRenewalMs(sent, NextUnit(jitter_state_)));
    done(id_);
  });
}

void Session::ScheduleRenew(MonoMs at_ms) {
  if (!alive()) return;
  DurationMs delay = std::max<DurationMs>(0, at_ms - SteadyNowMs());
  timer_->timer.expires_after(std::chrono::milliseconds(delay));
  std::weak_ptr<char> life = life_;
  timer_->timer.async_wait([this, life](const boost::system::error_code& ec) {
    if (ec || life.expired()) return;
    Renew();
  });
}

void Session::Renew() {
  if (!alive() || inflight_ != 0) return;
  const MonoMs sent = SteadyNowMs();
  // The next attempt, r after this one's send, unless an answer comes first:
  // a success replaces it with the next regular renewal, a 404 ends the
  // session, and a transport error, timeout, 500 or anything unexpected
  // leaves it. Still waiting by then: it goes anyway (see Session::Timer).
  ScheduleRenew(sent + options_.lease.retry_interval_ms);
  std::weak_ptr<char> life = life_;
  net::HttpCall call{"PUT", "/v1/session/renew/" + net::EscapeQueryValue(id_), "",
                     options_.renew_timeout_ms, net::RetryPolicy::None()};
  if (timer_->renewing.size() >= kMaxRenewAttempts) {
    const net::RequestId oldest = timer_->renewing.front();
    timer_->renewing.erase(timer_->renewing.begin());
    http_->Cancel(oldest);
  }
  auto self_id = std::make_shared<net::RequestId>(0);
  const net::RequestId id = http_->Request(
      std::move(call), [this, life, sent, self_id](Result<net::ClientResponse> result) {
        if (life.expired()) return;
        std::erase(timer_->renewing, *self_id);
        if (!alive()) return;
        if (!result.ok() && net::IsCancelled(result.status())) return;  // StopRenewing or a success
        if (result.ok() && result->status == 200) {
          lease_.Renewed(sent);
          ++renewals_;
          timer_->CancelRenewals(*http_);  // renewed: the other attempts are moot
          ScheduleRenew(lease_.NextRenewalMs(sent, NextUnit(jitter_state_)));
          return;
        }
        if (result.ok() && result->status == 404) {
          NotifyLost(
              Status::NotFound("session " + id_ + " expired or was destroyed: " + result->body));
          return;
        }
        // Anything else failed this attempt: the timer armed when it was sent
        // makes the next one r after it.
      });
  *self_id = id;
  if (id != 0) timer_->renewing.push_back(id);
}

void Session::StopRenewing() {
  timer_->timer.cancel();
  timer_->CancelRenewals(*http_);
  if (inflight_ != 0) {
    net::RequestId id = inflight_;
    inflight_ = 0;
    http_->Cancel(id);
  }
}

void Session::OnLost(LostCallback callback) {
  if (lost_) {
    callback(lost_status_);
    return;
  }
  lost_listeners_.push_back(std::move(callback));
}

void Session::NotifyLost(const Status& why) {
  if (lost_ || destroyed_ || !created()) return;
  lost_ = true;
  lost_status_ = why;
  lease_.Clear();
  StopRenewing();
  auto listeners = std::move(lost_listeners_);
  lost_listeners_.clear();
  std::weak_ptr<char> life = life_;
  for (auto& listener : listeners) {
    if (life.expired()) return;
    listener(why);
  }
}

void Session::Destroy(std::function<void(Status)> done) {
  if (!created() || destroyed_) {
    destroyed_ = true;
    boost::asio::post(io_, [done = std::move(done)]() { done(Status()); });
    return;
  }
  StopRenewing();
  destroyed_ = true;
  lease_.Clear();
  std::weak_ptr<char> life = life_;
  net::HttpCall call{"PUT", "/v1/session/destroy/" + net::EscapeQueryValue(id_), "", 0, {}};
  inflight_ = http_->Request(
      std::move(call), [this, life, done = std::move(done)](Result<net::ClientResponse> result) {
        if (life.expired()) return;
        inflight_ = 0;
        if (result.ok() && result->status == 200) {
          done(Status());
        } else {
          done(Status::Unavailable("session destroy: " + Describe(result)));
        }
      });
}

}  // namespace tenure::client
