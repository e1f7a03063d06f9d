// ClosedLoop: N keep-alive clients, each with one operation in flight at a
// time, starting the next as soon as the previous finishes, until a time
// limit or an operation count is reached. Subclasses define what one
// operation is (one PUT, an acquire+release pair, a create+destroy pair...).
//
// Closed loop (not a fixed arrival rate) because that is how lock clients
// behave and how the etcd figures the single-server targets were set against
// (its wrk numbers) were taken.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loop.h"

namespace tenure::bench {

// One client: a connection plus whatever per-client state an operation needs.
struct Client {
  int index = 0;
  std::unique_ptr<HttpConn> conn;
  Clock::time_point op_start;
  int step = 0;                      // position inside a multi-request operation
  std::string session;               // the client's own session id, when it has one
  std::vector<std::string> targets;  // prebuilt request targets
  std::size_t next = 0;              // cursor into targets
  std::uint64_t rng = 0;             // per-client xorshift state
};

struct LoopOutcome {
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  double seconds = 0;                    // first start to last finish
  std::vector<std::int64_t> latency_ns;  // one per successful operation
  bool timed_out = false;
};

class ClosedLoop {
 public:
  ClosedLoop(Loop& loop, asio::ip::tcp::endpoint endpoint, int clients);
  virtual ~ClosedLoop();
  ClosedLoop(const ClosedLoop&) = delete;
  ClosedLoop& operator=(const ClosedLoop&) = delete;

  bool Connect(std::string* error);
  // Runs until `duration` has passed (no new operation starts after it) or
  // `max_ops` operations have started; then waits for those in flight, at
  // most `grace` longer.
  LoopOutcome Run(Clock::duration duration, std::uint64_t max_ops,
                  Clock::duration grace = std::chrono::seconds(30));

  std::vector<Client>& clients() { return clients_; }

 protected:
  // Starts one operation on `c`; must end with exactly one FinishOp(c, ...).
  virtual void StartOp(Client& c) = 0;
  // `error` is empty on success; a failed client stops (its connection may
  // be broken, and retrying would turn one failure into an error storm).
  void FinishOp(Client& c, std::string_view error);

  Loop& loop_;

 private:
  void StartNext(Client& c, Clock::time_point now);

  asio::ip::tcp::endpoint endpoint_;
  std::vector<Client> clients_;
  LoopOutcome outcome_;
  Clock::time_point start_, deadline_, last_finish_;
  std::uint64_t started_ = 0;
  std::uint64_t max_ops_ = 0;
  int active_ = 0;
};

// Fast per-client pseudo-random numbers (xorshift64*): the key choice must
// not cost more than the request.
inline std::uint64_t NextRandom(std::uint64_t* state) {
  std::uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

// Builds an error text for an unexpected response.
std::string Unexpected(std::string_view what, const HttpResponse& r);

}  // namespace tenure::bench
