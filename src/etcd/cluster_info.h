// What etcd's Maintenance.Status and Cluster.MemberList answer about this
// server and its cluster (decision 0048 section 6), read from the Server
// now: both transports (the gateway, gRPC) answer with these. Loop thread.
#pragma once

#include <cstdint>
#include <string>

#include "etcd/messages_services.h"

namespace tenure::server {
class Server;
}

namespace tenure::etcd {

// The etcd release whose API tenure speaks (decision 0048: Patroni picks
// its paths from it) and the cluster version etcd reports beside it.
inline constexpr std::string_view kEtcdServerVersion = "3.4.23";
inline constexpr std::string_view kEtcdClusterVersion = "3.4.0";

StatusResponse StatusOf(const server::Server& server, std::uint64_t cluster_id);

// Every server of the raft configuration, its name and client URL from its
// member record (decision 0055); `client_url` is this server's etcd address
// as clients reach it, which stands for its own record's.
MemberListResponse MembersOf(const server::Server& server, std::uint64_t cluster_id,
                             const std::string& client_url);

}  // namespace tenure::etcd
