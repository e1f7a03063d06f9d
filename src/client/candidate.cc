#include "client/candidate.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>

namespace tenure::client {

namespace asio = boost::asio;

namespace {
// While the key is ours but the lease is not proven for G, how often to look
// whether a renewal got through again.
constexpr DurationMs kUnprovenPollMs = 200;
}  // namespace

struct Candidate::Timers {
  explicit Timers(asio::io_context& io)
      : session_retry(io), campaign(io), guarantee(io), health(io) {}
  void CancelAll() {
    session_retry.cancel();
    campaign.cancel();
    guarantee.cancel();
    health.cancel();
  }
  asio::steady_timer session_retry;  // re-create a session
  asio::steady_timer campaign;       // rest after resign, retry after a failed campaign
  asio::steady_timer guarantee;      // lease end - G, or the unproven poll
  asio::steady_timer health;
};

namespace {
template <typename F>
void ArmTimer(asio::steady_timer& timer, DurationMs delay_ms, std::weak_ptr<char> life, F then) {
  timer.expires_after(std::chrono::milliseconds(std::max<DurationMs>(0, delay_ms)));
  timer.async_wait([life, then = std::move(then)](const boost::system::error_code& ec) mutable {
    if (!ec && !life.expired()) then();
  });
}
}  // namespace

Candidate::Candidate(asio::io_context& io, CandidateOptions options, CandidateEvents events)
    : io_(io),
      options_(std::move(options)),
      events_(std::move(events)),
      http_(std::make_unique<net::HttpClient>(io, options_.http)),
      timers_(std::make_unique<Timers>(io)) {}

Candidate::~Candidate() {
  life_.reset();
  timers_->CancelAll();
  election_.reset();
  session_.reset();
}

template <typename F>
void Candidate::Post(F&& f) {
  std::weak_ptr<char> life = life_;
  asio::post(io_, [life, f = std::forward<F>(f)]() mutable {
    if (!life.expired()) f();
  });
}

std::string Candidate::LeaderKey() const {
  return options_.election.prefix + options_.election.name + "/leader";
}

const std::string& Candidate::session_id() const {
  static const std::string kNone;
  return session_ ? session_->id() : kNone;
}

bool Candidate::IsLeader() const {
  const DurationMs window =
      session_ ? session_->lease().options().guarantee_ms : options_.session.lease.guarantee_ms;
  return IsLeader(window);
}

bool Candidate::IsLeader(DurationMs window_ms) const {
  return election_ != nullptr && session_->alive() && election_->IsLeader(window_ms);
}

std::uint64_t Candidate::FencingToken() const { return election_ ? election_->FencingToken() : 0; }

DurationMs Candidate::ProvenForMs() const {
  if (!session_ || !session_->alive() || !session_->lease().held()) return 0;
  return std::max<DurationMs>(0, session_->lease().EndMs() - SteadyNowMs());
}

// ---- lifecycle -------------------------------------------------------------

void Candidate::Start() {
  if (started_) return;
  started_ = true;
  CreateSession();
  if (options_.health_check) RunHealthCheck();
}

void Candidate::CreateSession() {
  if (stopping_) return;
  election_.reset();
  session_ = std::make_unique<Session>(io_, *http_);
  std::weak_ptr<char> life = life_;
  session_->Create(options_.session, [this, life](Result<std::string> id) {
    if (life.expired() || stopping_) return;
    if (!id.ok()) {
      if (events_.note)
        events_.note("cannot create a session: " + std::string(id.status().message()));
      ArmTimer(timers_->session_retry, options_.session_retry_ms, life_,
               [this] { CreateSession(); });
      return;
    }
    session_->OnLost([this, life](const Status& why) {
      if (life.expired()) return;
      // The Election reports the loss of the key first (deposed); replacing
      // the session must wait until its callbacks have returned.
      Post([this, why] { OnSessionLost(why); });
    });
    StartElection();
  });
}

void Candidate::StartElection() {
  election_ = std::make_unique<Election>(*session_, options_.election);
  election_->OnLost([this](const Status& why) {
    // During a handoff the watch may see the successor before the txn answers.
    if (handoff_to_) {
      Evaluate("handed over to " + *handoff_to_);
      return;
    }
    Evaluate(std::string(why.message()));
    Post([this] { Campaign(); });
  });
  election_->Observe([this](const LeaderInfo& info) {
    leader_ = info;
    if (events_.leader_changed) events_.leader_changed(info);
    if (info.has_leader() && info.session != session_->id() && !leading_) AnnounceFollower();
    // Handed the key (resign --to) while resting: take it up now; the
    // campaign finds the key held by our own session. While unhealthy: give
    // it back at once rather than sit on it.
    if (info.session == session_->id() && !election_->holding()) {
      if (!healthy_ || stopping_) {
        election_->Release([](Status) {});
      } else if (resting_) {
        timers_->campaign.cancel();
        resting_ = false;
        Post([this] { Campaign(); });
      }
    }
  });
  election_->WatchSettings([this](const Settings& settings) { OnSettings(settings); });
  Campaign();
}

void Candidate::OnSessionLost(const Status& why) {
  if (stopping_) return;
  Evaluate("session lost: " + std::string(why.message()));
  StopCampaign();
  timers_->guarantee.cancel();
  if (events_.note)
    events_.note("session lost (" + std::string(why.message()) + "); creating a new one");
  ArmTimer(timers_->session_retry, options_.session_retry_ms, life_, [this] { CreateSession(); });
}

void Candidate::Stop(std::function<void()> done) {
  if (stopping_) return;
  stopping_ = true;
  StopCampaign();
  timers_->CancelAll();
  // Unregister (client/registration.h), then end the session.
  auto destroy = [this, done = std::move(done)]() mutable {
    auto end_session = [this, done = std::move(done)]() mutable {
      if (!session_ || !session_->alive()) {
        done();
        return;
      }
      session_->Destroy([done = std::move(done)](Status) { done(); });
    };
    if (!election_) {
      end_session();
      return;
    }
    election_->Unregister(
        [end_session = std::move(end_session)](Status) mutable { end_session(); });
  };
  if (election_ && election_->holding()) {
    election_->Resign([destroy = std::move(destroy)](Status) mutable { destroy(); });
    Evaluate("stopping");
    return;
  }
  destroy();
}

// ---- campaign ----------------------------------------------------------------

void Candidate::Campaign() {
  if (stopping_ || campaigning_ || !healthy_ || resting_ || !election_ || !session_->alive() ||
      election_->holding()) {
    return;
  }
  campaigning_ = true;
  const std::uint64_t generation = ++campaign_generation_;
  election_->Campaign(options_.value, [this, generation](Status status) {
    if (generation != campaign_generation_) return;  // stopped on purpose
    campaigning_ = false;
    if (status.ok()) {
      Evaluate("");
      return;
    }
    if (!session_->alive()) return;  // OnSessionLost starts over
    if (events_.note) events_.note("campaign: " + std::string(status.message()) + "; retrying");
    ArmTimer(timers_->campaign, options_.election.error_retry_ms, life_, [this] { Campaign(); });
  });
}

void Candidate::StopCampaign() {
  ++campaign_generation_;
  campaigning_ = false;
  timers_->campaign.cancel();
  if (election_) election_->StopCampaign();
}

void Candidate::Rest(DurationMs ms) {
  resting_ = true;
  StopCampaign();
  ArmTimer(timers_->campaign, ms, life_, [this] {
    resting_ = false;
    Campaign();
  });
}

// ---- leadership ----------------------------------------------------------------

// Reports elected/deposed when IsLeader() changed; `why` explains a deposal.
void Candidate::Evaluate(const std::string& why) {
  const bool now = !stopping_ && IsLeader();
  if (now != leading_) {
    leading_ = now;
    if (now) {
      follower_ = false;
      if (events_.elected) events_.elected(FencingToken());
    } else {
      std::string reason = why;
      if (reason.empty()) {
        reason = election_ && election_->holding()
                     ? "leadership can no longer be proven: no renewal acknowledged in time"
                     : "the leader key is no longer held by this candidate";
      }
      if (events_.deposed) events_.deposed(reason);
      follower_ = false;
      AnnounceFollower();
    }
  }
  ArmGuaranteeTimer();
}

// Leading: wake when the guarantee would lapse (a renewal in between moves
// it, so the timer re-evaluates and re-arms). Holding but unproven: poll.
void Candidate::ArmGuaranteeTimer() {
  timers_->guarantee.cancel();
  if (stopping_ || !election_ || !election_->holding()) return;
  DurationMs delay = kUnprovenPollMs;
  // At most a second ahead: timers run on CLOCK_MONOTONIC, which stops
  // during a suspend; the lease clock (CLOCK_BOOTTIME) does not.
  if (leading_)
    delay = std::min<DurationMs>(session_->lease().TerminateAtMs() - SteadyNowMs() + 1, 1'000);
  ArmTimer(timers_->guarantee, delay, life_, [this] { Evaluate(""); });
}

void Candidate::SetSettings(Settings settings, std::function<void(Status)> done) {
  if (!IsLeader()) {
    Post([done = std::move(done), key = LeaderKey()] {
      done(Status::FailedPrecondition(
          "not the leader: this candidate is not the guaranteed leader of " + key));
    });
    return;
  }
  election_->SetSettings(std::move(settings), std::move(done));
}

void Candidate::Resign(std::optional<std::string> to, std::function<void(Status)> done) {
  if (stopping_ || !election_ || !election_->holding()) {
    Post([done = std::move(done), key = LeaderKey()] {
      done(Status::FailedPrecondition("not the leader: this candidate does not hold " + key));
    });
    return;
  }
  if (!to) {
    election_->Resign(std::move(done));
    Evaluate("resigned");
    Rest(options_.resign_backoff_ms);
    return;
  }
  const std::string successor = *to;
  handoff_to_ = successor;
  election_->ResignTo(successor, [this, successor, done = std::move(done)](Status status) {
    handoff_to_.reset();
    if (status.ok()) {
      Evaluate("handed over to " + successor);
      Rest(options_.resign_backoff_ms);
    } else {
      // Refused: still the leader. Unknown outcome: no longer claiming it.
      Evaluate("handing over to " + successor + " failed: " + std::string(status.message()));
      if (!election_->holding()) Post([this] { Campaign(); });
    }
    done(status);
  });
}

// ---- settings and health ---------------------------------------------------------

// The first settings-changed of a follower comes when it knows it follows:
// another candidate leads, or it was just deposed. Not at start while the
// key is free (it is about to lead).
void Candidate::AnnounceFollower() {
  if (follower_ || leading_ || stopping_) return;
  follower_ = true;
  if (have_settings_ && events_.settings_changed) events_.settings_changed(settings_);
}

void Candidate::OnSettings(const Settings& settings) {
  const bool changed = !have_settings_ || settings != settings_;
  have_settings_ = true;
  settings_ = settings;
  if (changed && follower_ && !leading_ && !stopping_ && events_.settings_changed) {
    events_.settings_changed(settings_);
  }
}

void Candidate::RunHealthCheck() {
  if (stopping_) return;
  std::weak_ptr<char> life = life_;
  auto answered = std::make_shared<bool>(false);
  options_.health_check([this, life, answered](bool healthy, std::string why) {
    if (life.expired() || *answered) return;
    *answered = true;
    OnHealth(healthy, why);
    ArmTimer(timers_->health, options_.health_interval_ms, life_, [this] { RunHealthCheck(); });
  });
}

void Candidate::OnHealth(bool healthy, const std::string& why) {
  if (stopping_ || healthy == healthy_) return;
  healthy_ = healthy;
  if (events_.note) {
    events_.note(healthy ? "health check passes again: campaigning"
                         : "health check failed (" + why + "): stepping down");
  }
  if (!healthy) {
    StopCampaign();
    if (election_ && election_->holding()) {
      election_->Resign([](Status) {});
      Evaluate("health check failed: " + why);
    }
    return;
  }
  Campaign();
}

}  // namespace tenure::client
