// The four-letter words monitoring sends instead of a ConnectRequest
// (ZooKeeper's FourLetterCommands): ruok, srvr and mntr answered with what
// tenure can say honestly, every other word ZooKeeper knows with the text a
// ZooKeeper server whose whitelist leaves it out writes. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenure::zk {

// What srvr and mntr report, gathered by the port.
struct PortFacts {
  bool serving = false;         // this server serves ZooKeeper requests now
  std::string mode;             // "leader", "follower" or "standalone"
  std::string version;          // tenure's version
  std::int64_t zxid = 0;        // the applied index
  std::int64_t node_count = 0;  // znodes, ZooKeeper's own four included
  std::int64_t ephemerals = 0;
  std::int64_t sessions = 0;  // ZooKeeper sessions in the Store
  std::int64_t connections = 0;
  std::int64_t outstanding = 0;  // requests read and not yet answered
  std::int64_t received = 0;     // requests read since the port opened
  std::int64_t sent = 0;         // answers and events written
  std::int64_t latency_min_ms = 0;
  double latency_avg_ms = 0;
  std::int64_t latency_max_ms = 0;
  std::int64_t uptime_ms = 0;
};

// The text to write for `word` (one FourLetterWord knows), then close.
std::string FourLetterAnswer(std::string_view word, const PortFacts& facts);

}  // namespace tenure::zk
