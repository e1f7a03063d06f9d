// client::Election's leader settings (client/election.h): written in one
// txn guarded by the grant, read and watched in one recursive read.
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <utility>

#include "client/election_impl.h"
#include "client/response.h"
#include "common/base64.h"
#include "net/url.h"

namespace tenure::client {

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
  impl_->Stop(session_.http(), kSettingsTimer, &impl_->settings_req);
  SettingsOnce();
}

void Election::SettingsOnce() {
  if (!impl_->settings_cb) return;
  const std::uint64_t index = impl_->settings_index;
  BlockingGet read = KvRead(SettingsPrefix(), "recurse", index);
  impl_->settings_req =
      Send("GET", std::move(read.target), "", read.timeout_ms, {},
           [this, index](Result<net::ClientResponse> got) {
             impl_->settings_req = 0;
             auto settings =
                 got.ok() ? ParseSettings(*got, SettingsPrefix()) : Result<Settings>(got.status());
             auto next = settings.ok() ? NextWaitIndex(*got, index)
                                       : Result<std::uint64_t>(settings.status());
             if (!next.ok()) {
               After(kSettingsTimer, options_.error_retry_ms, [this] { SettingsOnce(); });
               return;
             }
             impl_->settings_index = *next;
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
