// tenure::Session: a TTL session held for the application: created on the
// server, renewed by the library on the schedule of docs/leadership.md, and
// what can be proven about its lease from the client's own clock (a renewal
// proves the lease from when it was SENT, never from when its answer
// arrived).
//
// Threading and lifetime: see tenure/client.h. Destroying a Session stops
// renewing it and destroys its Elections, without destroying it on the
// server (it expires by TTL, and its locks are then released after the
// lock-delay): call Destroy() first for a clean exit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tenure/client.h"
#include "tenure/export.h"
#include "tenure/options.h"
#include "tenure/status.h"

namespace tenure {

class TENURE_EXPORT Session {
 public:
  using LostCallback = std::function<void(const Status& why)>;

  // A session of `client`'s servers, not created yet.
  Session(Client& client, SessionOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Creates the session on the server (PUT /v1/session/create: a pure TTL
  // session, no health checks) and starts renewing it. Blocks until the
  // server answered. kInvalidArgument when the options cannot keep their
  // promise (see SessionOptions::guarantee_ms); kFailedPrecondition when
  // created (or being created) already.
  Status Create();
  // The same without blocking: `done` runs on the client's thread.
  void Create(std::function<void(Status)> done);

  // Stops renewing and destroys the session on the server: the keys it holds
  // are released (or deleted, with behavior "delete") and their lock-delay
  // starts, as for any lost session; Election::Resign() first hands a key on
  // without lock-delay. OnLost listeners do not run. Blocks until the server
  // answered.
  Status Destroy();
  void Destroy(std::function<void(Status)> done);

  // Runs once, on the client's thread, when the session is lost: the server
  // dropped it (renewals could not get through within its TTL, or someone
  // destroyed it). Several may be added; one added after the loss runs at once.
  void OnLost(LostCallback callback);

  // The session's id; "" before it was created.
  std::string id() const;
  // Created, not lost, not destroyed.
  bool alive() const;
  // The lease is provably held for the next window_ms milliseconds.
  bool Guaranteed(std::int64_t window_ms) const;
  // Successful renewals so far (the create not counted).
  std::uint64_t renewals() const;
  const SessionOptions& options() const { return options_; }

 private:
  friend class Election;
  std::shared_ptr<sdk::Core> core_;
  std::uint64_t handle_ = 0;
  SessionOptions options_;
};

}  // namespace tenure
