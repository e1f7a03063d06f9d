// client::Candidate: a long-running candidate with Juju's leadership
// contract (Juju's "Implementing leadership" page; docs/leadership.md, "The
// candidate agent"). It keeps a session alive (a new one when the server
// drops it), campaigns, and reports three events:
//
//   elected           leadership starts: the key is ours AND the lease is
//                     guaranteed for G (IsLeader() turned true);
//   deposed           leadership ends: the key was lost, we resigned, the
//                     health check failed, or the guarantee lapsed (renewals
//                     did not get through in time) -- IsLeader() turned false;
//   settings_changed  as a follower: once per change of the leader settings,
//                     and once on every entry into the follower state (another
//                     candidate seen leading, or deposed), as Juju's
//                     leader-settings-changed. The leader is not told of its
//                     own writes.
//
// elected and deposed alternate strictly, starting with elected. If renewals
// recover while the key is still ours, elected runs again (same fencing
// token): leadership is what can be proven, not what the key says.
//
// Handoff: Resign() releases the key and rests for resign_backoff_ms before
// campaigning again, so a waiting candidate wins; Resign(to) hands the key to
// the named candidate in one transaction. An optional health check runs every
// health_interval_ms: while it fails the candidate steps down and does not
// campaign.
//
// LOOP THREAD ONLY, like Session and Election: every call and every callback
// on the thread running `io`. Destroying the Candidate cancels everything
// without releasing (the session then expires by TTL); call Stop() first for
// a clean exit. REQUIRES: a callback does not destroy the Candidate.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "client/election.h"
#include "client/session.h"
#include "common/status.h"
#include "common/types.h"
#include "net/http_client.h"

namespace boost::asio {
class io_context;
}

namespace tenure::client {

struct CandidateOptions {
  net::HttpClientOptions http;
  SessionOptions session;                // session.lease holds T, rho, R, r and G
  ElectionOptions election;              // name, candidate, prefix
  std::string value;                     // the leader key's value while we lead
  DurationMs resign_backoff_ms = 2'000;  // rest after Resign() before campaigning again
  DurationMs session_retry_ms = 1'000;   // after a failed session create
  // Health check: called every health_interval_ms with a callback to answer
  // (healthy, why). Empty: always healthy.
  using HealthReply = std::function<void(bool healthy, std::string why)>;
  std::function<void(HealthReply)> health_check;
  DurationMs health_interval_ms = 10'000;
};

struct CandidateEvents {
  std::function<void(std::uint64_t fencing_token)> elected;
  std::function<void(const std::string& why)> deposed;
  std::function<void(const Settings& settings)> settings_changed;
  std::function<void(const LeaderInfo& leader)> leader_changed;  // any change of the key
  std::function<void(const std::string& text)> note;  // diagnostics (retries, health changes)
};

class Candidate {
 public:
  Candidate(boost::asio::io_context& io, CandidateOptions options, CandidateEvents events);
  ~Candidate();
  Candidate(const Candidate&) = delete;
  Candidate& operator=(const Candidate&) = delete;

  // Creates the session and campaigns. Call once.
  void Start();
  // Resigns when leading (deposed runs), deletes this candidate's
  // registration (Election::Unregister), destroys the session, then `done`.
  // Bounded by the HTTP client's timeouts. No event runs after `done`.
  void Stop(std::function<void()> done);

  // Leader now and guaranteed for the window (default: G of the options).
  bool IsLeader() const;
  bool IsLeader(DurationMs window_ms) const;
  // The fencing token of the current grant while the key is ours, else 0.
  std::uint64_t FencingToken() const;
  // Milliseconds the lease is still proven for (0 when not held).
  DurationMs ProvenForMs() const;
  const std::string& session_id() const;
  const LeaderInfo& leader() const { return leader_; }
  bool healthy() const { return healthy_; }
  bool resting() const { return resting_; }
  const CandidateOptions& options() const { return options_; }
  std::string LeaderKey() const;

  // Leader settings (one atomic transaction guarded by our fence). Refused
  // with kFailedPrecondition "not the leader: ..." unless IsLeader().
  void SetSettings(Settings settings, std::function<void(Status)> done);
  // Resign (to = nullopt) or hand over to a named candidate. Refused with
  // kFailedPrecondition when not holding the key.
  void Resign(std::optional<std::string> to, std::function<void(Status)> done);

 private:
  struct Timers;
  void CreateSession();
  void StartElection();
  void Campaign();
  void StopCampaign();
  void OnSessionLost(const Status& why);
  void Evaluate(const std::string& why_not);
  void ArmGuaranteeTimer();
  void OnSettings(const Settings& settings);
  void AnnounceFollower();
  void RunHealthCheck();
  void OnHealth(bool healthy, const std::string& why);
  void Rest(DurationMs ms);
  template <typename F>
  void Post(F&& f);

  boost::asio::io_context& io_;
  CandidateOptions options_;
  CandidateEvents events_;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<Timers> timers_;
  // Replaced when the server drops the session; the Election goes with it.
  std::unique_ptr<Session> session_;
  std::unique_ptr<Election> election_;
  std::shared_ptr<char> life_ = std::make_shared<char>(0);
  std::uint64_t campaign_generation_ = 0;  // ignores the answers of stopped campaigns
  bool started_ = false;
  bool stopping_ = false;
  bool campaigning_ = false;
  bool leading_ = false;  // elected reported, deposed not yet
  bool healthy_ = true;
  bool resting_ = false;
  std::optional<std::string> handoff_to_;  // a ResignTo in flight
  bool follower_ = false;                  // announced as a follower (settings-changed ran)
  bool have_settings_ = false;
  Settings settings_;
  LeaderInfo leader_;
};

}  // namespace tenure::client
