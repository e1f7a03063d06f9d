// Server: member records (who each server is, for routing to the leader)
// and the route to the leader.
#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>

#include "common/assert.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/server.h"
#include "server/server_timers.h"

namespace tenure::server {
namespace {

// An etcd address as a member tells it: host:port, or https://host:port for
// a TLS port (decision 0055).
bool ValidEtcdAddress(std::string_view address) {
  if (address.starts_with("https://")) address.remove_prefix(8);
  return ParseHostPort(address).ok();
}

// A ZooKeeper address likewise: host:port, or tls://host:port (decision 0056).
bool ValidZkAddress(std::string_view address) {
  if (address.starts_with("tls://")) address.remove_prefix(6);
  return ParseHostPort(address).ok();
}

}  // namespace

state::Member Server::SelfMember() const {
  return {node_->id(),
          options_.node_name,
          options_.raft.address,
          options_.http_address,
          options_.etcd_address,
          options_.zk_address,
          LogIndex()};
}

bool Server::SelfRecordCurrent() const {
  const state::Member* record = store_.FindMember(node_->id());
  if (record == nullptr) return false;
  state::Member current = *record;
  current.modify_index = LogIndex();
  return current == SelfMember();
}

Server::LeaderRoute Server::RouteToLeader() const {
  LeaderRoute route{node_->LeaderId(), "", "", ""};
  if (route.id == 0 || route.id == NodeId()) return route;
  if (const state::Member* member = store_.FindMember(route.id);
      member != nullptr && !member->http_address.empty()) {
    route.http_address = member->http_address;
    route.etcd_address = member->etcd_address;
    route.zk_address = member->zk_address;
    return route;
  }
  for (const raft::PeerAdvert& advert : node_->PeerAdverts()) {
    if (advert.id == route.id && ParseHostPort(advert.http_address).ok()) {
      route.http_address = advert.http_address;
      if (ValidEtcdAddress(advert.etcd_address)) route.etcd_address = advert.etcd_address;
      if (ValidZkAddress(advert.zk_address)) route.zk_address = advert.zk_address;
    }
  }
  return route;
}

void Server::WriteSelfRecord() {
  if (!IsLeader() || !leader_ready_ || self_record_in_flight_ || SelfRecordCurrent()) return;
  self_record_in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  Propose(state::SetMember{SelfMember()}, [this, alive](Result<state::ApplyResult> result) {
    if (alive.expired() || !*alive.lock()) return;
    self_record_in_flight_ = false;
    if (result.ok() || !IsLeader()) return;
    auto retry = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::seconds(1));
    retry->async_wait([this, alive, retry](const boost::system::error_code& ec) {
      if (!ec && !alive.expired() && *alive.lock()) WriteSelfRecord();
    });
  });
}

void Server::ScheduleMemberRecords() {
  housekeeping_->members.expires_after(std::chrono::seconds(1));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->members.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock() || stopping_) return;
    if (!restarting_) {
      WritePeerRecords();
      EnsureAclSetup();
    }
    ScheduleMemberRecords();
  });
}

void Server::WritePeerRecords() {
  if (!IsLeader() || !leader_ready_ || peer_record_in_flight_) return;
  std::vector<raft::PeerAdvert> adverts = node_->PeerAdverts();
  for (const raft::ServerInfo& server : node_->Configuration()) {
    if (server.id == node_->id()) continue;  // WriteSelfRecord's
    auto advert = std::find_if(adverts.begin(), adverts.end(),
                               [&](const raft::PeerAdvert& a) { return a.id == server.id; });
    // Only what the server said at the address the configuration gives it.
    if (advert == adverts.end() || advert->raft_address != server.address) continue;
    if (advert->node_name.empty() || !ParseHostPort(advert->http_address).ok()) continue;
    // An etcd or ZooKeeper address that does not parse is recorded as none.
    const std::string etcd =
        ValidEtcdAddress(advert->etcd_address) ? advert->etcd_address : std::string();
    const std::string zk = ValidZkAddress(advert->zk_address) ? advert->zk_address : std::string();
    state::Member wanted{
        server.id, advert->node_name, advert->raft_address, advert->http_address, etcd,
        zk,        LogIndex()};
    if (const state::Member* record = store_.FindMember(server.id); record != nullptr) {
      state::Member current = *record;
      current.modify_index = LogIndex();
      if (current == wanted) continue;
    }
    peer_record_in_flight_ = true;
    std::weak_ptr<bool> alive = alive_;
    Propose(state::SetMember{wanted}, [this, alive](Result<state::ApplyResult>) {
      if (!alive.expired() && *alive.lock()) peer_record_in_flight_ = false;
    });
    return;  // one at a time; the next second's pass does the rest
  }
}

}  // namespace tenure::server
