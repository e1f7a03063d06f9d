// tenure::Client: libtenure's connection to a tenure cluster (or to Consul,
// whose session and KV API tenure speaks), and the thread on which the
// library does its work.
//
//   tenure::Client client({{"127.0.0.1:8500"}});
//   tenure::Session session(client, {});
//   if (tenure::Status s = session.Create(); !s.ok()) ...
//   tenure::Election election(session, {"billing", "node-a"});
//   if (tenure::Status s = election.Campaign("node-a"); s.ok())
//     use(election.FencingToken());
//
// THREADING. A Client owns one thread that runs everything the library does:
// requests, session renewals, watches, timers. Every member function of
// Client, Session and Election may be called from any thread. Callbacks (the
// `done` of the non-blocking forms, OnLost, Observe) run on the client's
// thread, one at a time, in the order their events happened; they must
// return quickly (renewals wait behind them) and must not throw (an exception
// leaving a callback terminates the program). A callback may call any member
// function except the blocking ones (Create(), Destroy(), Campaign(value),
// TryOnce, Resign(), GetSettings, SetSettings without a callback), which
// return kFailedPrecondition there instead of waiting for the thread they
// block. A callback may destroy a Session or Election.
//
// The client's thread blocks every signal: the process's signals go to the
// application's threads.
//
// LIFETIME. Destroying the Client stops its thread after it destroyed what
// is left of its Sessions and Elections there (releasing nothing on the
// server: sessions then expire by their TTL). Those objects may still be
// destroyed later; their calls then fail with kUnavailable (a `done` given
// then runs at once, on the calling thread, and a listener given then never
// runs). Do not destroy the Client in one of its own callbacks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tenure/export.h"
#include "tenure/options.h"
#include "tenure/status.h"

namespace tenure {

namespace sdk {
class Core;
}  // namespace sdk

class TENURE_EXPORT Client {
 public:
  // Starts the client's thread. Connections are made when requests need them:
  // a wrong address is reported by the first call that uses it.
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The servers, after the defaults of ClientOptions::addresses.
  const std::vector<std::string>& addresses() const;

 private:
  friend class Session;
  std::shared_ptr<sdk::Core> core_;
};

// The version of libtenure, e.g. "0.1.0".
TENURE_EXPORT const char* Version();

}  // namespace tenure
