#include "client/registration.h"

#include <memory>
#include <utility>
#include <vector>

#include "client/kv_pair.h"
#include "client/response.h"
#include "net/url.h"

namespace tenure::client {

namespace {

// The entries of a GET /v1/kv answer; none for a 404.
Result<std::vector<KvPair>> Entries(const Result<net::ClientResponse>& got,
                                    const std::string& what) {
  if (got.ok() && got->status == 404) return std::vector<KvPair>();
  if (!got.ok() || got->status != 200) {
    return Status::Unavailable(what + ": " + Describe(got));
  }
  return ParseKvPairs(got->body);
}

// DELETE key?cas=index: a registration changed since it was read stays.
void DeleteIfUnchanged(net::HttpClient& http, const KvPair& entry,
                       std::function<void(Status)> done) {
  const std::string what = "delete registration " + entry.key;
  http.Request(
      {"DELETE",
       "/v1/kv/" + net::EscapeKeyPath(entry.key) + "?cas=" + std::to_string(entry.modify_index),
       "",
       0,
       {}},
      [what, done = std::move(done)](Result<net::ClientResponse> result) {
        if (!result.ok() || result->status != 200) {
          done(Status::Unavailable(what + ": " + Describe(result)));
          return;
        }
        done(Status());  // "false": taken up again meanwhile, and kept
      });
}

}  // namespace

void DeleteOwnRegistration(net::HttpClient& http, const std::string& key,
                           const std::string& session, std::function<void(Status)> done) {
  http.Request({"GET", "/v1/kv/" + net::EscapeKeyPath(key), "", 0, {}},
               [&http, key, session, done = std::move(done)](Result<net::ClientResponse> got) {
                 auto entries = Entries(got, "read registration " + key);
                 if (!entries.ok()) {
                   done(entries.status());
                   return;
                 }
                 if (entries->empty() || entries->front().key != key) {
                   done(Status());
                   return;
                 }
                 const KvPair& entry = entries->front();
                 if (!entry.session.empty() && entry.session != session) {
                   done(Status());  // another candidate's now: the name was taken up again
                   return;
                 }
                 DeleteIfUnchanged(http, entry, std::move(done));
               });
}

void SweepDeadRegistrations(net::HttpClient& http, const std::string& prefix,
                            std::function<void(Status)> done) {
  http.Request(
      {"GET", "/v1/kv/" + net::EscapeKeyPath(prefix) + "?recurse", "", 0, {}},
      [&http, prefix, done = std::move(done)](Result<net::ClientResponse> got) {
        auto entries = Entries(got, "read registrations " + prefix);
        if (!entries.ok()) {
          done(entries.status());
          return;
        }
        std::vector<KvPair> dead;
        for (KvPair& entry : *entries) {
          // Only registrations: prefix + a candidate name, which has no '/'.
          const bool registration = entry.key.size() > prefix.size() &&
                                    entry.key.compare(0, prefix.size(), prefix) == 0 &&
                                    entry.key.find('/', prefix.size()) == std::string::npos;
          if (registration && entry.session.empty()) dead.push_back(std::move(entry));
        }
        if (dead.empty()) {
          done(Status());
          return;
        }
        // Every delete answers; `done` runs after the last with the first failure.
        struct Count {
          std::size_t left;
          Status first;
          std::function<void(Status)> done;
        };
        auto count = std::make_shared<Count>(Count{dead.size(), Status(), std::move(done)});
        for (const KvPair& entry : dead) {
          DeleteIfUnchanged(http, entry, [count](Status status) {
            if (!status.ok() && count->first.ok()) count->first = status;
            if (--count->left == 0) count->done(count->first);
          });
        }
      });
}

}  // namespace tenure::client
