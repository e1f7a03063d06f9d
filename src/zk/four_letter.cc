#include "zk/four_letter.h"

#include <fmt/format.h>

namespace tenure::zk {
namespace {

constexpr std::string_view kNotServing =
    "This ZooKeeper instance is not currently serving requests\n";

std::string Srvr(const PortFacts& f) {
  return fmt::format(
      "Zookeeper version: 3.8.0-tenure-{}\n"
      "Latency min/avg/max: {}/{:.4f}/{}\n"
      "Received: {}\n"
      "Sent: {}\n"
      "Connections: {}\n"
      "Outstanding: {}\n"
      "Zxid: 0x{:x}\n"
      "Mode: {}\n"
      "Node count: {}\n",
      f.version, f.latency_min_ms, f.latency_avg_ms, f.latency_max_ms, f.received, f.sent,
      f.connections, f.outstanding, f.zxid, f.mode, f.node_count);
}

std::string Mntr(const PortFacts& f) {
  std::string out;
  auto line = [&out](std::string_view key, const auto& value) {
    out += fmt::format("zk_{}\t{}\n", key, value);
  };
  line("version", "3.8.0-tenure-" + f.version);
  line("server_state", f.mode);
  line("avg_latency", fmt::format("{:.4f}", f.latency_avg_ms));
  line("max_latency", f.latency_max_ms);
  line("min_latency", f.latency_min_ms);
  line("packets_received", f.received);
  line("packets_sent", f.sent);
  line("num_alive_connections", f.connections);
  line("outstanding_requests", f.outstanding);
  line("uptime", f.uptime_ms);
  line("znode_count", f.node_count);
  line("ephemerals_count", f.ephemerals);
  line("global_sessions", f.sessions);
  line("local_sessions", 0);
  return out;
}

}  // namespace

std::string FourLetterAnswer(std::string_view word, const PortFacts& facts) {
  if (word == "ruok") return "imok";
  if (word == "srvr") return facts.serving ? Srvr(facts) : std::string(kNotServing);
  if (word == "mntr") return facts.serving ? Mntr(facts) : std::string(kNotServing);
  return fmt::format("{} is not executed because it is not in the whitelist.\n", word);
}

}  // namespace tenure::zk
