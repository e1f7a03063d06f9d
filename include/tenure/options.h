// libtenure's options and values: plain structs of standard types. Times are
// milliseconds (the _ms suffix). Standard C++17 only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tenure {

// Where the servers are, and how long a request may take.
struct ClientOptions {
  // "host:port", "http://host:port" or "https://host:port", one or more
  // members of a cluster: requests fail over round-robin across them
  // (transport errors and HTTP 500 are retried, as Consul's own client
  // does). Empty: $TENURE_HTTP_ADDR, then $CONSUL_HTTP_ADDR (comma-separated
  // lists allowed), then 127.0.0.1:8500, as the tenure CLI resolves them.
  std::vector<std::string> addresses;
  // Sent as X-Consul-Token on every request. Empty: $TENURE_HTTP_TOKEN, then
  // the file named by $TENURE_HTTP_TOKEN_FILE, then $CONSUL_HTTP_TOKEN, then
  // the file named by $CONSUL_HTTP_TOKEN_FILE (read whole and trimmed). A
  // token file that cannot be read, or is empty, fails every call with
  // kInvalidArgument naming it.
  std::string token;
  std::int64_t connect_timeout_ms = 5'000;
  std::int64_t request_timeout_ms = 30'000;  // one call, retries included (not blocking waits)

  // TLS, for https:// addresses. Each setting left empty is taken from
  // $TENURE_<X>, then $CONSUL_<X>, as the tenure CLI does (<X> in brackets).
  // A file that cannot be loaded fails every call, naming it. A server whose
  // certificate fails the checks, or that refuses ours, fails the call with
  // OpenSSL's reason; it is not retried, and never in clear text.
  std::string ca_file;           // PEM CAs of the servers' certificates [CACERT]; else the system's
  std::string client_cert_file;  // PEM, for servers that verify clients [CLIENT_CERT]
  std::string client_key_file;   // its unencrypted PEM key [CLIENT_KEY]
  std::string tls_server_name;   // sent and checked instead of the host [TLS_SERVER_NAME]
  // false: the servers' certificates are not checked [HTTP_SSL_VERIFY]; unset: true.
  std::optional<bool> tls_verify;
  // true: addresses without a scheme are https [HTTP_SSL]; unset: false.
  std::optional<bool> https;
};

// A TTL session, renewed by the library (docs/leadership.md).
struct SessionOptions {
  std::string name = "tenure";
  std::int64_t ttl_ms = 15'000;        // T; the server's minimum is 10 s
  std::int64_t lock_delay_ms = 5'000;  // D: after a loss, the keys it held stay free for D
  std::string behavior = "release";    // what its loss does to its keys: "release" or "delete"
  // The session's Node; empty = the server's node name. With ACLs the
  // session needs session:write on it (docs/acl.md).
  std::string node;
  // R: time between renewals; 0 = T/3. A failed renewal is retried every second.
  std::int64_t renew_interval_ms = 0;
  // G: Election::IsLeader() is true only while the lease is proven for G
  // more milliseconds; 0 = T/3. One renewal proves about 0.98 T, which must
  // cover R + G (Session::Create refuses the options otherwise).
  std::int64_t guarantee_ms = 0;
};

// An election: the keys <prefix><name>/leader (the lock, whose value
// describes the leader) and <prefix><name>/candidates/<candidate> (this
// candidate's registration).
struct ElectionOptions {
  std::string name;       // the election: <prefix><name>/...
  std::string candidate;  // this candidate's name (candidates/<candidate>); empty = the session id
  std::string prefix = "service/";
  std::int64_t lock_retry_ms =
      500;  // back-off when the key is free but acquire failed (lock-delay)
  std::int64_t error_retry_ms = 1'000;  // back-off after a transport error or unexpected answer
  std::int64_t wait_ms = 15'000;        // wait of each blocking query
  // The fair acquire (docs/leadership.md, "The queue"): the campaign parks in
  // the leader key's FIFO queue (PUT ?acquire=S&queue&wait=queue_wait_ms)
  // and is handed the key in turn. A server without the queue (Consul, or
  // tenure with -fair-queue=false) answers `false` at once and the campaign
  // falls back to blocking reads, as with false here.
  bool fair_queue = true;
  std::int64_t queue_wait_ms = 300'000;  // wait of each queued acquire (server cap: 10 min)
};

// One observation of the leader key.
struct LeaderInfo {
  bool exists = false;      // the key exists (false after a delete)
  std::string session;      // holder's session; empty = no leader
  std::string value;        // the key's value (the leader's description)
  std::uint64_t fence = 0;  // the holder's fencing token; 0 while unlocked
  std::uint64_t modify_index = 0;
  bool has_leader() const { return !session.empty(); }
  bool operator==(const LeaderInfo& other) const {
    return exists == other.exists && session == other.session && value == other.value &&
           fence == other.fence && modify_index == other.modify_index;
  }
  bool operator!=(const LeaderInfo& other) const { return !(*this == other); }
};

// Leader settings: <prefix><name>/settings/<key> -> value.
using Settings = std::map<std::string, std::string>;

}  // namespace tenure
