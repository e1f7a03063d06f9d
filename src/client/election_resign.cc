// client::Election's way out (client/election.h): resign, release, hand
// the key to a named candidate, unregister.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <utility>

#include "client/election_impl.h"
#include "client/queue.h"
#include "client/registration.h"
#include "client/response.h"
#include "common/base64.h"
#include "net/url.h"

namespace tenure::client {

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

}  // namespace tenure::client
