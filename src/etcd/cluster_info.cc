#include "etcd/cluster_info.h"

#include "etcd/kv_service.h"
#include "server/server.h"

namespace tenure::etcd {

StatusResponse StatusOf(const server::Server& server, std::uint64_t cluster_id) {
  StatusResponse out;
  out.header = HeaderAt(server, cluster_id, server.store().applied_index());
  out.body.version = std::string(kEtcdServerVersion);
  out.body.leader = server.LeaderId();
  out.body.raft_index = server.LastLogIndex();
  out.body.raft_term = out.header.raft_term;
  out.body.raft_applied_index = server.AppliedRaftIndex();
  if (std::string disk = server.DiskFailure(); !disk.empty()) {
    out.body.errors.push_back("disk error: " + disk);
  }
  for (const raft::ServerInfo& info : server.RaftConfiguration()) {
    if (info.id == server.NodeId()) out.body.is_learner = !info.voter;
  }
  return out;
}

MemberListResponse MembersOf(const server::Server& server, std::uint64_t cluster_id,
                             const std::string& client_url) {
  MemberListResponse out;
  out.header = HeaderAt(server, cluster_id, server.store().applied_index());
  for (const raft::ServerInfo& info : server.RaftConfiguration()) {
    Member& member = out.body.members.emplace_back();
    member.id = info.id;
    member.peer_urls.push_back("tcp://" + info.address);
    member.is_learner = !info.voter;
    if (const state::Member* record = server.store().FindMember(info.id); record != nullptr) {
      member.name = record->name;
      // host:port for a clear-text port, https://host:port for a TLS one.
      const std::string& address = record->etcd_address;
      if (address.starts_with("https://")) {
        member.client_urls.push_back(address);
      } else if (!address.empty()) {
        member.client_urls.push_back("http://" + address);
      }
    }
    if (info.id == server.NodeId()) {
      // Its own as bound (its record's may be older, or absent with port 0).
      member.name = server.options().node_name;
      member.client_urls.clear();
      if (!client_url.empty()) member.client_urls.push_back(client_url);
    }
  }
  return out;
}

}  // namespace tenure::etcd
