// Loop: see loop.h.
#include "loop.h"

namespace tenure::bench {

// The concurrency hint turns off asio's internal locking: everything runs on
// this one thread, and uncontended mutexes still cost on every handler.
Loop::Loop() : ioc_(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE), limit_timer_(ioc_), sleep_timer_(ioc_) {}

bool Loop::Run(Clock::duration limit) {
  if (!finished_) {
    // The generation tells a stale timer completion (from an earlier Run
    // whose cancel raced with its expiry) from this Run's limit.
    std::uint64_t generation = ++generation_;
    limit_timer_.expires_after(limit);
    limit_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
      if (!ec && generation == generation_) ioc_.stop();
    });
    ioc_.restart();
    ioc_.run();
    limit_timer_.cancel();
  }
  bool finished = finished_;
  finished_ = false;
  return finished;
}

void Loop::Finish() {
  finished_ = true;
  ioc_.stop();
}

bool Loop::RunUntil(const std::function<bool()>& done, Clock::duration limit) {
  Clock::time_point deadline = Clock::now() + limit;
  while (!done()) {
    Clock::time_point now = Clock::now();
    if (now >= deadline || !Run(deadline - now)) return done();
  }
  return true;
}

void Loop::Drain() {
  ioc_.restart();
  while (ioc_.poll() > 0) {
  }
  finished_ = false;
}

void Loop::Sleep(Clock::duration d) {
  sleep_timer_.expires_after(d);
  bool done = false;
  sleep_timer_.async_wait([this, &done](const boost::system::error_code&) {
    done = true;
    Finish();
  });
  // The timer always fires; the limit only guards against a stopped clock.
  if (!RunUntil([&] { return done; }, d + std::chrono::seconds(10))) {
    sleep_timer_.cancel();
    Drain();
  }
}

OwnedResponse Request(Loop& loop, HttpConn& conn, std::string_view method, std::string_view target,
                      std::string_view body, Clock::duration limit) {
  OwnedResponse out;
  bool done = false;
  conn.Send(method, target, body, [&](const HttpResponse& r) {
    out.status = r.status;
    out.consul_index = r.consul_index;
    out.body.assign(r.body);
    done = true;
    loop.Finish();
  });
  if (!loop.RunUntil([&] { return done; }, limit)) {
    conn.Close();
    loop.Drain();  // delivers the aborted request to the lambda above
    out.status = -1;
    out.body =
        "timed out after " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()) +
        " ms: " + std::string(method) + " " + std::string(target);
  }
  return out;
}

}  // namespace tenure::bench
