// The private half of client::Election (client/election.h), shared by its
// files: election.cc (campaign, leadership), election_watch.cc (the
// leader-key watch), election_resign.cc (resign and hand-over),
// election_settings.cc (leader settings) and election_answers.cc (what the
// server's answers say). Nothing else includes it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/election.h"
#include "common/status.h"
#include "net/http_client.h"

namespace tenure::client {

// Election::Impl::timers, by use.
enum ElectionTimer {
  kCampaignTimer = 0,
  kWatchTimer = 1,
  kSettingsTimer = 2,
  kLeaveTimer = 3,
  kTimers = 4
};

// A 403: the token may not do what the campaign needs (ACLs). Waiting
// would not change that, so the campaign ends with the server's text.
bool IsDenied(const Result<net::ClientResponse>& result);
// kPermissionDenied "campaign for <key>: <the server's text>".
Status Denied(const std::string& key, const net::ClientResponse& response);
// A 500 "invalid session": the server no longer knows the session.
bool IsInvalidSession(const Result<net::ClientResponse>& result);
// The first entry of a KV GET answer (200) or "no key" (404).
Result<LeaderInfo> ParseLeader(const net::ClientResponse& response);
// The settings under `prefix` of a recursive KV GET answer (404: none).
Result<Settings> ParseSettings(const net::ClientResponse& response, const std::string& prefix);
// Errors[].What of a 409 txn answer, joined; `first_op_failed` tells
// whether operation 0 (the guard) is among them.
std::string TxnErrors(const std::string& body, bool* first_op_failed = nullptr);

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

  // Cancels timers[timer] and the request in *req (its callback runs now).
  void Stop(net::HttpClient& http, int timer, net::RequestId* req) {
    timers[timer].cancel();
    if (*req != 0) http.Cancel(std::exchange(*req, 0));
  }
};

}  // namespace tenure::client
