// Who may open a raft connection to this node, and joins over the raft
// transport (decision 0012). See node_impl.h for the threading rules.
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <fmt/core.h>

#include <boost/asio/steady_timer.hpp>
#include <cstring>

#include "common/host_port.h"
#include "common/log.h"
#include "raft/node_impl.h"

namespace tenure::raft {

namespace {

constexpr DurationMs kJoinRetryMs = 1'000;
constexpr DurationMs kJoinRefusedRetryMs = 5'000;

const struct raft_server* FindServer(const struct raft_configuration& conf, std::uint64_t id) {
  for (unsigned i = 0; i < conf.n; ++i) {
    if (conf.servers[i].id == id) return &conf.servers[i];
  }
  return nullptr;
}

}  // namespace

// A raft connection comes from a server of the latest configuration (the
// uncommitted one included: a server being added talks to the leader before
// the change commits), at the address the configuration gives it. A node
// with no configuration yet (started with -join) takes the first leader
// that reaches it.
std::string Node::Impl::AdmitPeer(const wire::Hello& hello) const {
  if (phase_ != Phase::kRunning) return "this server is not running raft";
  const struct raft_configuration& conf = raft_.configuration;
  if (conf.n == 0) return "";
  const struct raft_server* server = FindServer(conf, hello.id);
  if (server == nullptr) {
    return fmt::format("server {} is not in this cluster's configuration", hello.id);
  }
  if (hello.raft_address != server->address) {
    return fmt::format("server {} is at {} in this cluster's configuration, not at {}", hello.id,
                       server->address, hello.raft_address);
  }
  return "";
}

// A join from an authenticated dialer: the leader adds it (a voter once it
// has caught up) and answers when done; anyone else names the leader.
void Node::Impl::HandleJoin(const wire::Hello& hello,
                            std::function<void(wire::JoinAnswer)> answer) {
  using wire::JoinStatus;
  raft_id leader_id = 0;
  const char* leader_address = nullptr;
  if (phase_ == Phase::kRunning) raft_leader(&raft_, &leader_id, &leader_address);
  std::string leader(leader_address != nullptr ? leader_address : "");
  if (phase_ != Phase::kRunning) {
    return answer({JoinStatus::kFailed, 0, "", "this server is not running raft"});
  }
  if (options_.refuse_keyless_joins && options_.cluster_key.empty() &&
      options_.tls_accept == nullptr) {
    // The joiner logs the reason; a line here per attempt would let anyone
    // who reaches the port fill the log.
    return answer({JoinStatus::kRefused, 0, "",
                   "this server has no cluster key (-raft-key-file) or mutual TLS, and takes "
                   "no servers without one unless started with -raft-insecure-keyless"});
  }
  if (!RaftLeader()) {
    return answer({JoinStatus::kNotLeader, leader_id, leader, "this server is not the leader"});
  }
  if (Result<HostPort> where = ParseHostPort(hello.raft_address); !where.ok()) {
    return answer({JoinStatus::kRefused, leader_id, leader,
                   "bad raft address: " + std::string(where.status().message())});
  }
  const struct raft_configuration& conf = raft_.configuration;
  for (unsigned i = 0; i < conf.n; ++i) {
    const struct raft_server& server = conf.servers[i];
    if (server.id == hello.id && hello.raft_address == server.address) {
      if (server.role == RAFT_VOTER) return answer({JoinStatus::kJoined, leader_id, leader, ""});
      return answer({JoinStatus::kFailed, leader_id, leader,
                     fmt::format("server {} is still catching up before it votes", hello.id)});
    }
    if (server.id == hello.id) {
      return answer({JoinStatus::kRefused, leader_id, leader,
                     fmt::format("server {} is already a member at {}; remove it first "
                                 "(tenure operator raft remove-peer -id {})",
                                 hello.id, server.address, hello.id)});
    }
    if (hello.raft_address == server.address) {
      return answer({JoinStatus::kRefused, leader_id, leader,
                     fmt::format("{} is server {}'s address", server.address, server.id)});
    }
  }
  log::Info("raft", fmt::format("server {} ({}) at {} asks to join; adding it", hello.id,
                                hello.node_name, hello.raft_address));
  AddVoter(hello.id, hello.raft_address,
           [this, answer = std::move(answer), id = hello.id](Status status) {
             raft_id now_leader = 0;
             const char* now_address = nullptr;
             if (phase_ == Phase::kRunning) raft_leader(&raft_, &now_leader, &now_address);
             std::string where(now_address != nullptr ? now_address : "");
             if (status.ok()) {
               log::Info("raft", fmt::format("server {} is a voter", id));
               answer({JoinStatus::kJoined, now_leader, where, ""});
             } else {
               answer({JoinStatus::kFailed, now_leader, where, std::string(status.message())});
             }
           });
}

bool Node::Impl::SelfVotes() const {
  if (phase_ != Phase::kRunning) return false;
  const struct raft_server* self = FindServer(raft_.configuration, options_.id);
  return self != nullptr && self->role == RAFT_VOTER;
}

void Node::Impl::JoinCluster(std::vector<std::string> addresses) {
  join_addresses_ = std::move(addresses);
  join_next_ = 0;
  join_redirect_.clear();
  if (!join_timer_) join_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  ScheduleJoin(0);
}

void Node::Impl::ScheduleJoin(DurationMs delay_ms) {
  if (join_addresses_.empty() || phase_ == Phase::kStopping || phase_ == Phase::kStopped) return;
  join_timer_->expires_after(std::chrono::milliseconds(delay_ms));
  join_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) JoinAttempt();
  });
}

void Node::Impl::JoinAttempt() {
  if (join_addresses_.empty() || join_in_flight_ || phase_ != Phase::kRunning) return;
  if (SelfVotes()) {
    log::Info("raft", fmt::format("server {} is a voter of the cluster", options_.id));
    join_addresses_.clear();
    return;
  }
  std::string address;
  if (!join_redirect_.empty()) {
    address = std::exchange(join_redirect_, std::string());
  } else {
    address = join_addresses_[join_next_++ % join_addresses_.size()];
  }
  join_in_flight_ = true;
  transport_->Join(address, [this, address](Result<wire::JoinAnswer> result) {
    join_in_flight_ = false;
    if (join_addresses_.empty()) return;  // stopped meanwhile
    if (!result.ok()) {
      log::Write(
          log::Level::kWarn, "raft",
          fmt::format("join through {} failed: {}; retrying", address, result.status().message()));
      return ScheduleJoin(kJoinRetryMs);
    }
    switch (result->status) {
      case wire::JoinStatus::kJoined:
        log::Info("raft", fmt::format("joined the cluster as server {} (leader: server {} at {})",
                                      options_.id, result->leader_id, result->leader_address));
        join_addresses_.clear();
        return;
      case wire::JoinStatus::kNotLeader:
        if (!result->leader_address.empty() && result->leader_address != address) {
          join_redirect_ = result->leader_address;
          return ScheduleJoin(0);
        }
        log::Warn("raft", fmt::format("join through {}: no leader known yet; retrying", address));
        return ScheduleJoin(kJoinRetryMs);
      case wire::JoinStatus::kRefused:
        log::Warn("raft", fmt::format("join refused by {}: {}; retrying in {} s", address,
                                      result->reason, kJoinRefusedRetryMs / 1000));
        return ScheduleJoin(kJoinRefusedRetryMs);
      case wire::JoinStatus::kFailed:
        log::Write(
            log::Level::kWarn, "raft",
            fmt::format("join through {} did not complete: {}; retrying", address, result->reason));
        return ScheduleJoin(kJoinRetryMs);
    }
  });
}

}  // namespace tenure::raft
