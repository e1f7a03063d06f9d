// Every limit tenure enforces, in one place, with the reason for its value.
// docs/limits.md lists them for users; keep the two in step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace tenure::limits {

// --- KV ---------------------------------------------------------------------
// Consul's kv_max_value_size default (512 KiB, raft's suggested max entry):
// the largest value the Consul API writes.
constexpr std::size_t kConsulValueBytesMax = 512 * 1024;
// etcd's --max-request-bytes default: a Put or Txn whose bytes, with the 17
// bytes etcd's own envelope adds (its InternalRaftRequest: the request's
// tag and length, a header holding a request id, whose varint takes 9 bytes
// or, for some member ids, 10), pass this is refused with "etcdserver:
// request is too large" (etcd/kv_service.cc).
constexpr std::size_t kEtcdRequestBytesMax = 1536 * 1024;
constexpr std::size_t kEtcdRequestEnvelopeBytes = 17;
// The largest value the store holds, whichever API wrote it: each API's
// own rule is narrower (Consul's above; an etcd request's bytes; a
// ZooKeeper request's 1 MiB frame), so this is only the widest of them, the
// bound a restored state's values are checked against.
constexpr std::size_t kKvValueBytesMax = kEtcdRequestBytesMax;
// Keys are path-like names; Consul has no hard limit but raft entries do. A
// bound keeps every entry (key + value + framing) inside one raft entry.
constexpr std::size_t kKvKeyBytesMax = 4 * 1024;

// --- Transactions -----------------------------------------------------------
// Consul >= 1.14 allows 128 operations per /v1/txn.
constexpr std::size_t kTxnOpsMax = 128;
// Consul's txn_max_req_len default.
constexpr std::size_t kTxnBodyBytesMax = 512 * 1024;

// --- Sessions ---------------------------------------------------------------
// Consul's session_ttl_min default and its fixed 24 h maximum.
constexpr DurationNs kSessionTtlMinNs = 10 * kNsPerSecond;
constexpr DurationNs kSessionTtlMaxNs = 24 * 3600 * kNsPerSecond;
// Consul's MaxLockDelay: a longer stored value is applied as 60 s.
constexpr DurationNs kLockDelayMaxNs = 60 * kNsPerSecond;
// Consul's default lock-delay when the request does not give one.
constexpr DurationNs kLockDelayDefaultNs = 15 * kNsPerSecond;
// Consul multiplies the TTL by 2 before expiring (SessionTTLMultiplier).
constexpr int kSessionTtlMultiplierDefault = 2;
// Names and node names are free text; bound them so one session stays small.
constexpr std::size_t kSessionNameBytesMax = 1024;
constexpr std::size_t kSessionChecksMax = 64;
// etcd leases, tenure sessions named by a number (decision 0048, section 3):
// a shorter TTL, 0 and negative ones included, is raised to etcd's minimum
// (2 s with its default election timeout); a longer one than etcd's
// MaxLeaseTTL is refused. 9e9 s in ns still fits an int64.
constexpr DurationNs kLeaseTtlMinNs = 2 * kNsPerSecond;
constexpr std::int64_t kLeaseTtlMaxSeconds = 9'000'000'000;
constexpr DurationNs kLeaseTtlMaxNs = kLeaseTtlMaxSeconds * kNsPerSecond;

// etcd watches (etcd/watch_hub.h; docs/limits.md). etcd 3.4 has no limit of
// its own; past these a create answers created and canceled with a reason.
constexpr std::size_t kEtcdWatchersPerStreamMax = 10'000;
constexpr std::size_t kEtcdWatchersMax = 100'000;
// A watch stream whose answers wait unsent past this stops taking events as
// they apply; its watchers replay from the history window once it drains
// (or get etcd's compacted answer if the window no longer holds them).
constexpr std::size_t kEtcdWatchUnsentBytes = 4 * 1024 * 1024;
// One watch answer holds at most about this many events: whole revisions,
// so one revision with more goes whole (etcd's watchBatchMaxRevs counts
// revisions; events bound memory better).
constexpr std::size_t kEtcdWatchEventsPerAnswer = 1000;
// A watcher that asked for fragments gets an answer larger than this in
// pieces (etcd's max request bytes plus its gRPC overhead allowance).
constexpr std::size_t kEtcdWatchFragmentBytes = (1536 + 512) * 1024;
// rho, the bound on any clock's rate error (docs/leadership.md), in
// percent: a numbered session ends at TTL x (1 + rho) after its last
// acknowledged renewal, so never before its TTL in real time.
constexpr int kClockRateBoundPercent = 1;
// Sessions in the store. 1M sessions of ~300 B is ~300 MB: far past any
// lock workload, small enough that a runaway client cannot exhaust memory.
constexpr std::size_t kSessionsMax = 1'000'000;

// --- Blocking queries -------------------------------------------------------
// Consul's default_query_time and max_query_time.
constexpr DurationMs kBlockingWaitDefaultMs = 5 * 60 * 1000;
constexpr DurationMs kBlockingWaitMaxMs = 10 * 60 * 1000;
// Jitter added to a blocking wait is in [0, wait / kBlockingJitterFraction).
constexpr int kBlockingJitterFraction = 16;
// Parked blocking queries per server; each costs one connection anyway.
constexpr std::size_t kBlockingWaitersMax = 100'000;

// --- Snapshots (docs/snapshots.md, decision 0024) ---------------------------
// The largest snapshot file GET /v1/snapshot answers and PUT /v1/snapshot
// (the one endpoint with a body limit of its own) restores. A restore travels
// as one raft entry, held in memory a few times over on every server (the
// body, the entry, the decoded state): 64 MiB is 128 values at Consul's
// 512 KiB maximum, far past what elections and locks keep, and bounded. The
// body must arrive within kHttpRequestReadTimeoutMs (30 s): about 2.2 MB/s.
constexpr std::size_t kSnapshotBytesMax = 64 * 1024 * 1024;
// A restored state larger than this travels in chunks of at most this many
// bytes, one raft entry each (state::RestoreChunk, decision 0050).
constexpr std::size_t kRestoreChunkBytesMax = 1024 * 1024;
// The largest index (applied index, and so every ModifyIndex, fencing token
// and table index) and LockIndex a decoded state may carry: a restore file,
// an InstallSnapshot, a data dir's own snapshot. 2^53 - 1: every index a
// client sees stays an exact JSON number for JavaScript clients (the
// dashboard, npm's consul), and a state restored at the bound still has
// 2^62 - 2^53 entries (about 146,000 years at a million writes a second)
// before the live state's own bound (2^62, Store::Validate), past which the
// server can no longer snapshot or restart. A cluster reaches 2^53 only
// after 285 years at a million writes a second.
constexpr std::uint64_t kSnapshotIndexMax = (std::uint64_t{1} << 53) - 1;

// --- Replicated times ---------------------------------------------------------
// Every wall-clock time in the state (the replicated clock, lock-delay
// windows, queue and history times, ACL token times) lies in years 1970 to
// 9999: what RFC 3339 writes with four digits and the live API parses
// (common/rfc3339.h), so arithmetic on them never overflows.
constexpr std::int64_t kUnixMsMax = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z

// --- HTTP -------------------------------------------------------------------
// Request line plus headers. Go's net/http default is 1 MiB; clients send < 1 KiB.
constexpr std::size_t kHttpHeaderBytesMax = 64 * 1024;
// Largest body any endpoint accepts (a KV value or a txn); larger bodies get
// 413 before they are read in full.
constexpr std::size_t kHttpBodyBytesMax =
    kTxnBodyBytesMax > kConsulValueBytesMax ? kTxnBodyBytesMax : kConsulValueBytesMax;
// A body on the etcd port's JSON gateway: a request of gRPC's largest
// message (etcd's 2 MiB, etcd/grpc_wire.h) in base64 JSON takes about
// 2.7 MiB. One past this is answered as etcd answers a message past its
// gRPC limit (ResourceExhausted), unread.
constexpr std::size_t kEtcdGatewayBodyBytesMax = 4 * 1024 * 1024;
// Open client connections. Each idle connection costs a few KiB; the process
// raises RLIMIT_NOFILE at start to fit this.
constexpr std::size_t kHttpConnectionsMax = 20'000;
// Open connections from one client address, over the HTTP and HTTPS
// listeners together: Consul's limits.http_max_conns_per_client default
// (-http-max-conns-per-client; 0 turns it off, as in Consul). Without it one
// address could take every connection under the cap above and lock every
// other client out, the management token included. Each parked request
// (blocking query, fair acquire) holds one of its address's connections, so
// this also bounds what one address parks. Members of the cluster are not
// limited: a follower forwards its clients' requests from its own address.
constexpr std::size_t kHttpConnectionsPerClientDefault = 200;
// A request that has started must arrive in full within this time, so a
// client that sends half a request and stalls cannot hold a slot forever.
constexpr DurationMs kHttpRequestReadTimeoutMs = 30'000;
// An idle keep-alive connection is closed after this long without a request,
// so forgotten connections give their descriptors back. Longer than the 90 s
// after which Go's Transport (Consul's api client) drops its own idle
// connections, so such a client closes first and never sends a request into
// a close. A parked request (a blocking query of up to 10 min) is not idle:
// it has no deadline until it is answered.
constexpr DurationMs kHttpIdleTimeoutMs = 2 * 60 * 1000;
// A new connection must send its first byte within this time. Clients
// connect when they have a request to send (Go's Transport, python-consul,
// curl), so 10 s is generous; without it a connection that never speaks held
// a descriptor for the whole idle timeout, and 20,000 of them exhausted the
// process. Keep-alive idle time between requests stays kHttpIdleTimeoutMs.
constexpr DurationMs kHttpFirstByteTimeoutMs = 10'000;

// --- HTTP: answer sizes, unsent output, descriptors (docs/limits.md) -------
// The largest answer a single request may build: a GET ?recurse or ?keys, or
// the results of one /v1/txn (summed over its operations). The size is
// counted from the Store before anything is copied or rendered, so a refused
// request costs a walk over the entries, never the answer's memory. 64 MiB is
// 128 values at Consul's 512 KiB maximum, base64-encoded; one answer then
// peaks at about twice that in memory (the copied entries and their JSON).
constexpr std::size_t kHttpResponseBytesMax = 64 * 1024 * 1024;
// Response bytes built but not yet taken by the kernel, summed over every
// connection. A response that would take the total past this is replaced by
// 429 (after cutting stalled writers, below). Responses up to
// kHttpSmallResponseBytes always go out, so renewals, locks and ordinary
// reads are never refused because of a few greedy readers.
constexpr std::size_t kHttpUnsentBytesMax = 256 * 1024 * 1024;
constexpr std::size_t kHttpSmallResponseBytes = 64 * 1024;
// While the unsent total is over kHttpUnsentBytesMax, a connection whose
// pending response made no progress for this long is closed to make room
// (otherwise a writer is cut after kHttpRequestReadTimeoutMs without progress).
constexpr DurationMs kHttpStalledWriterMs = 5'000;
// Descriptors kept free of client connections for raft (segments,
// snapshots, peers), libuv, the listener and logs. The connection cap is
// min(kHttpConnectionsMax, (RLIMIT_NOFILE - reserve) / 2): halved because on
// a follower each served connection may hold a second descriptor to the
// leader (decision 0008).
constexpr std::size_t kHttpDescriptorReserve = 256;

// --- HTTP/2 (decision 0053; docs/limits.md) ---------------------------------
// Streams one HTTP/2 connection may have open at once
// (SETTINGS_MAX_CONCURRENT_STREAMS); a stream past it is refused with
// REFUSED_STREAM, which clients retry. A gRPC watch or keep-alive stream
// holds one for as long as it lasts.
constexpr std::size_t kHttp2StreamsMax = 1024;
// One request's header block (SETTINGS_MAX_HEADER_LIST_SIZE, each field
// counted as name + value + 32 as RFC 9113 counts it): HTTP/1.1's limit.
constexpr std::size_t kHttp2HeaderListBytesMax = kHttpHeaderBytesMax;
// Flow-control windows: the body bytes a client may send on one stream,
// and on the whole connection, before the stream's owner has handled (and
// given back, Stream::Consume) what came before. A gRPC message is at most
// 2 MiB (decision 0048); its owner consumes what it buffers.
constexpr std::size_t kHttp2StreamWindowBytes = 1024 * 1024;
constexpr std::size_t kHttp2ConnectionWindowBytes = 4 * 1024 * 1024;
// Bodies of requests (not gRPC) being assembled on one connection, summed
// over its streams: their window is given back as they arrive (a body may
// be larger than a window), so this bounds what one connection buffers
// (HTTP/1.1 buffers one body at a time). Data past it resets its stream
// with REFUSED_STREAM, which clients retry. A body the large-body gate lets
// through (a snapshot restore) is not counted.
constexpr std::size_t kHttp2RequestBodiesBytesMax = 16 * 1024 * 1024;
// Streams a client may reset within kHttp2ResetWindowMs; one more is the
// "rapid reset" attack (CVE-2023-44487): GOAWAY ENHANCE_YOUR_CALM, closed.
constexpr std::size_t kHttp2ResetsMax = 1000;
constexpr DurationMs kHttp2ResetWindowMs = 10'000;
// A connection with open streams that has sent nothing for this long is
// pinged; one that does not answer within the timeout is closed (a client
// that vanished without a FIN must not hold its watches forever). Without
// open streams the idle timeout applies instead, as to HTTP/1.1.
constexpr DurationMs kHttp2PingAfterMs = 60'000;
constexpr DurationMs kHttp2PingTimeoutMs = 20'000;

// --- ACL rules (src/acl) ---------------------------------------------------
// The text of one policy's rules, HCL or JSON. Consul sets no bound; a policy
// granting a few hundred keys and node prefixes is a few KiB, and the bound
// keeps parsing one policy (and the rules a token gathers) small.
constexpr std::size_t kAclRulesBytesMax = 64 * 1024;
// Nesting of braces and brackets in one policy's rules. The deepest
// meaningful form, JSON `{"key": [{"a": {"policy": "read"}}]}`, nests four;
// the parsers recurse at most this deep, so no input can exhaust the stack.
constexpr std::size_t kAclRulesNestingMax = 16;

// --- ACL tokens and policies (src/state/acl_table) -----------------------------
// Every token and policy lives in the replicated state and in every snapshot;
// these bound what one cluster holds (a token is a few hundred bytes, a
// policy at most its rules) and what resolving one token costs.
constexpr std::size_t kAclTokensMax = 100'000;
constexpr std::size_t kAclPoliciesMax = 10'000;
constexpr std::size_t kAclPoliciesPerTokenMax = 64;
// A token's or a policy's Description.
constexpr std::size_t kAclDescriptionBytesMax = 4 * 1024;

// --- Raft -------------------------------------------------------------------
// Proposals in flight at once; beyond this, writes get 500 "too many writes
// in flight" rather than queueing without bound.
constexpr std::size_t kProposalsInFlightMax = 16'384;
// ...and their bytes: proposed entries stay in memory until applied (16,384
// large values would be 8 GiB). One proposal is always let through.
constexpr std::uint64_t kProposalBytesInFlightMax = 128ull * 1024 * 1024;

// --- Raft transport (src/raft/transport, src/raft/wire) ----------------------
// What a peer may send on a raft connection, checked before libraft sees it
// (raft/wire/message_gate.h). Generous for members, bounded for strangers:
// nothing is allocated from a declared size beyond these.
// One command: the largest is an etcd request (a Txn of up to 1.5 MiB), a
// Consul txn body, or a KV value plus key and framing, all well under this.
constexpr std::uint64_t kRaftCommandBytesMax = 2 * 1024 * 1024;
static_assert(kRaftCommandBytesMax > kTxnBodyBytesMax + kKvKeyBytesMax + 64 * 1024);
static_assert(kRaftCommandBytesMax > kKvValueBytesMax + kKvKeyBytesMax + 64 * 1024);
static_assert(kRaftCommandBytesMax > kEtcdRequestBytesMax + 64 * 1024);
// libraft 0.15 sends a lagging follower every entry it still holds in one
// AppendEntries; the log in memory is bounded by kRaftLogBytesMax plus
// kRaftTrailingBytesMax (below) and by entry count (snapshot threshold plus
// trailing, 20,480), so these leave room for writes during a snapshot.
// One log entry: a command, or a snapshot restore (RestoreState), which
// carries a whole state of up to kSnapshotBytesMax.
constexpr std::uint64_t kRaftEntryBytesMax = kSnapshotBytesMax + kRaftCommandBytesMax;
constexpr std::uint64_t kRaftAppendEntriesMax = 65'536;
constexpr std::uint64_t kRaftAppendBytesMax = 1024ull * 1024 * 1024;
static_assert(kRaftEntryBytesMax < kRaftAppendBytesMax / 4);
// One InstallSnapshot: the whole state. A store past this cannot be sent to a
// follower; docs/limits.md says so.
constexpr std::uint64_t kRaftSnapshotBytesMax = 4ull * 1024 * 1024 * 1024;
// A raft configuration (ids and addresses of every server).
constexpr std::uint64_t kRaftConfigurationBytesMax = 64 * 1024;
// RequestVotes passed on per member (peer id, all its connections together)
// per election timeout (a candidate sends one per round, plus a pre-vote);
// more are dropped as a lossy network would.
constexpr unsigned kRaftVotesPerElectionTimeoutMax = 4;
// Of those, disrupt-leader votes (a leadership transfer's, which a follower
// grants even while it hears a leader): two, so an operator's transfer back
// right after a transfer passes, and a flood still cannot churn leaders.
constexpr unsigned kRaftDisruptVotesPerElectionTimeoutMax = 2;
// A connection must finish the handshake within this time.
constexpr DurationMs kRaftHandshakeTimeoutMs = 5'000;
// A message started on a raft connection must be whole within this time
// plus its declared size at kRaftMessageBytesPerSecondMin, counted from its
// first byte: a peer that trickles (a byte now and then) cannot hold what
// libraft buffered for it. 4 MiB/s is 32 Mbit/s, below any link members
// should run on; a 1 GiB AppendEntries then has 266 s.
constexpr DurationMs kRaftMessageTimeMs = 10'000;
constexpr std::uint64_t kRaftMessageBytesPerSecondMin = 4 * 1024 * 1024;
// Bytes of inbound raft messages in progress (received, not yet whole: held
// by the gate or buffered by libraft), all raft connections together. A
// leader sends one message at a time; this fits a snapshot and an
// AppendEntries at their limits (an old leader's and a new one's), and no
// number of connections holds more.
constexpr std::uint64_t kRaftInboundBytesMax = kRaftSnapshotBytesMax + kRaftAppendBytesMax;
// Connections still in the handshake, and raft connections per peer id and in
// all, beyond which new ones are refused (the oldest of a peer is replaced).
constexpr std::size_t kRaftHandshakesMax = 64;
// Of those, from one host (a stranger cannot take every slot from one
// address; members dial from their own, a few connections each).
constexpr std::size_t kRaftHandshakesPerHostMax = 16;
constexpr std::size_t kRaftLinksPerPeerMax = 2;
constexpr std::size_t kRaftLinksMax = 256;

// --- Raft log in memory --------------------------------------------------------
// libraft keeps every entry in memory until a snapshot (every 16,384 entries)
// and 4,096 after it: with 512 KiB values that is 8 GiB. The node takes a
// snapshot early once the entries since the last one hold this many bytes,
// and keeps at most kRaftTrailingBytesMax of trailing entries.
constexpr std::uint64_t kRaftLogBytesMax = 256ull * 1024 * 1024;
// Free space a write needs on the data dir's file system besides its own
// bytes: room for libraft's next open segment (8 MiB), which it creates
// ahead of need. Below it tenure refuses the write before libraft starts it.
constexpr std::uint64_t kRaftDiskReserveBytes = 8ull * 1024 * 1024;
constexpr std::uint64_t kRaftTrailingBytesMax = 64ull * 1024 * 1024;
static_assert(kRaftLogBytesMax + kRaftTrailingBytesMax < kRaftAppendBytesMax / 2);

}  // namespace tenure::limits
