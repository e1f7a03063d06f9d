// client::ConsulLock's semaphore (client/lock.h, a limit above 1):
// api.Semaphore's contender key, holders document and release
// (docs/consul-api.md 7.3).
#include <string>
#include <utility>

#include "client/lock.h"
#include "client/lock_keys.h"
#include "client/response.h"
#include "net/url.h"

namespace tenure::client {

namespace {

constexpr int kReleaseCasAttempts = 50;  // semaphore release: CAS retries

}  // namespace

std::string ConsulLock::ContenderKey() const { return options_.prefix + "/" + session_.id(); }

// What a semaphore lists: "<prefix>/", so that "jobs" never sees "jobs2/..."
// (its keys are all <prefix>/.lock and <prefix>/<session>).
std::string ConsulLock::Folder() const { return options_.prefix + "/"; }

// First our contender key, locked by our session.
void ConsulLock::MakeContender() {
  AcquireKey(ContenderKey(), kSemaphoreFlagValue, 0, [this](Result<Acquired> won) {
    if (!won.ok()) {
      return AcquireFailed("failed to make contender entry: " +
                           std::string(won.status().message()));
    }
    if (!won->granted) return AcquireFailed("failed to make contender entry");
    SemaphoreWait(0);
  });
}

// Then a slot: our session in the holders document, written by CAS, once
// fewer than the limit hold one (holders without a contender key pruned).
void ConsulLock::SemaphoreWait(std::uint64_t index) {
  Read(Folder(), "recurse", index, [this, index](Result<net::ClientResponse> result) {
    auto read = ReadPairs(result, index, "failed to read prefix");
    if (!read.ok()) return AcquireFailed(std::string(read.status().message()));
    const std::uint64_t next = read->next_index;
    const KvPair* lock_pair = FindPair(read->pairs, key_);
    if (lock_pair != nullptr && lock_pair->flags != kSemaphoreFlagValue) {
      return AcquireFailed(kSemaphoreConflict);
    }
    SemaphoreLock lock;
    lock.limit = options_.limit;
    if (lock_pair != nullptr) {
      auto decoded = DecodeSemaphoreLock(lock_pair->Value());
      if (!decoded.ok()) return AcquireFailed(std::string(decoded.status().message()));
      lock = std::move(*decoded);
      if (lock.limit != options_.limit) {
        return AcquireFailed("semaphore limit conflict (lock: " + std::to_string(lock.limit) +
                             ", local: " + std::to_string(options_.limit) + ")");
      }
    }
    PruneHolders(read->pairs, &lock);
    if (lock.holders.count(session_.id()) != 0) return Held(0, next);
    if (static_cast<int>(lock.holders.size()) >= lock.limit) return SemaphoreWait(next);
    lock.holders[session_.id()] = true;
    const std::uint64_t cas = lock_pair != nullptr ? lock_pair->modify_index : 0;
    Send("PUT",
         "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(cas) +
             "&flags=" + std::to_string(kSemaphoreFlagValue),
         EncodeSemaphoreLock(lock), 0, {}, [this, next](Result<net::ClientResponse> put) {
           if (!put.ok() || put->status != 200) {
             return AcquireFailed("failed to update lock: " + ConsulDescribe(put));
           }
           if (TrimSpace(put->body) == "true") return Held(0, 0);
           SemaphoreWait(next);  // someone else wrote first: look again
         });
  });
}

// Ourselves out of the holders (CAS, retried), then our contender key.
void ConsulLock::ReleaseSlot(int attempt, std::function<void(Status)> done) {
  Read(key_, "", 0,
       [this, attempt, done = std::move(done)](Result<net::ClientResponse> result) mutable {
         auto read = ReadPairs(result, 0, "failed to read lock");
         if (!read.ok()) return done(read.status());
         const KvPair* pair = FindPair(read->pairs, key_);
         SemaphoreLock lock;
         if (pair != nullptr && pair->flags == kSemaphoreFlagValue) {
           auto decoded = DecodeSemaphoreLock(pair->Value());
           if (decoded.ok()) lock = std::move(*decoded);
         }
         if (pair == nullptr || lock.holders.count(session_.id()) == 0) {
           return DeleteContender(std::move(done));
         }
         lock.holders.erase(session_.id());
         Send("PUT",
              "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(pair->modify_index) +
                  "&flags=" + std::to_string(kSemaphoreFlagValue),
              EncodeSemaphoreLock(lock), 0, {},
              [this, attempt, done = std::move(done)](Result<net::ClientResponse> put) mutable {
                if (!put.ok() || put->status != 200) {
                  return done(Status::Unavailable(ConsulDescribe(put)));
                }
                if (TrimSpace(put->body) == "true") return DeleteContender(std::move(done));
                if (attempt + 1 >= kReleaseCasAttempts) {
                  return done(Status::Conflict("the holders document kept changing"));
                }
                ReleaseSlot(attempt + 1, std::move(done));
              });
       });
}

void ConsulLock::DeleteContender(std::function<void(Status)> done) {
  Send("DELETE", "/v1/kv/" + net::EscapeKeyPath(ContenderKey()), "", 0, {},
       [done = std::move(done)](Result<net::ClientResponse> result) {
         if (!result.ok() || result->status != 200) {
           return done(Status::Unavailable(ConsulDescribe(result)));
         }
         done(Status::Ok());
       });
}

}  // namespace tenure::client
