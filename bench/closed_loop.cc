// ClosedLoop: see closed_loop.h.
#include "closed_loop.h"

#include <fmt/format.h>

namespace tenure::bench {

std::string Unexpected(std::string_view what, const HttpResponse& r) {
  std::string_view body = r.body.substr(0, 200);
  if (r.status < 0) return fmt::format("{}: {}", what, body);
  return fmt::format("{}: HTTP {} {}", what, r.status, body);
}

ClosedLoop::ClosedLoop(Loop& loop, asio::ip::tcp::endpoint endpoint, int clients)
    : loop_(loop), endpoint_(endpoint), clients_(static_cast<std::size_t>(clients)) {
  for (int i = 0; i < clients; ++i) {
    Client& c = clients_[static_cast<std::size_t>(i)];
    c.index = i;
    c.conn = std::make_unique<HttpConn>(loop.ioc(), endpoint);
    c.rng = 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1);
  }
}

ClosedLoop::~ClosedLoop() {
  for (Client& c : clients_) c.conn->Close();
  loop_.Drain();  // aborted reads must run before the connections go away
}

bool ClosedLoop::Connect(std::string* error) {
  for (Client& c : clients_) {
    std::string why;
    if (!c.conn->Connect(&why)) {
      *error = fmt::format("connect client {} to {}:{}: {}", c.index,
                           endpoint_.address().to_string(), endpoint_.port(), why);
      return false;
    }
  }
  return true;
}

LoopOutcome ClosedLoop::Run(Clock::duration duration, std::uint64_t max_ops,
                            Clock::duration grace) {
  outcome_ = LoopOutcome();
  outcome_.latency_ns.reserve(
      static_cast<std::size_t>(std::min<std::uint64_t>(max_ops, 1'000'000)));
  started_ = 0;
  max_ops_ = max_ops;
  active_ = 0;
  start_ = Clock::now();
  deadline_ = start_ + duration;
  last_finish_ = start_;
  for (Client& c : clients_) {
    if (started_ >= max_ops_) break;
    if (c.conn->failed()) continue;
    ++active_;
    StartNext(c, start_);
  }
  if (!loop_.RunUntil([this] { return active_ == 0; }, duration + grace)) {
    outcome_.timed_out = true;
    ++outcome_.errors;
    if (outcome_.first_error.empty()) {
      outcome_.first_error =
          fmt::format("{} operations still in flight {} s after the time limit", active_,
                      std::chrono::duration_cast<std::chrono::seconds>(grace).count());
    }
    for (Client& c : clients_) {
      if (c.conn->busy()) c.conn->Close();
    }
    loop_.Drain();
    last_finish_ = Clock::now();
  }
  outcome_.seconds = std::chrono::duration<double>(last_finish_ - start_).count();
  return std::move(outcome_);
}

void ClosedLoop::StartNext(Client& c, Clock::time_point now) {
  ++started_;
  c.step = 0;
  c.op_start = now;
  StartOp(c);
}

void ClosedLoop::FinishOp(Client& c, std::string_view error) {
  Clock::time_point now = Clock::now();
  last_finish_ = now;
  if (error.empty()) {
    ++outcome_.ok;
    outcome_.latency_ns.push_back((now - c.op_start).count());
    if (now < deadline_ && started_ < max_ops_) {
      StartNext(c, now);
      return;
    }
  } else {
    ++outcome_.errors;
    if (outcome_.first_error.empty()) {
      outcome_.first_error = fmt::format("client {}: {}", c.index, error);
    }
  }
  if (--active_ == 0) loop_.Finish();
}

}  // namespace tenure::bench
