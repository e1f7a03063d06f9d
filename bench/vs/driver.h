// tenure_vs: one measurement of the side-by-side benchmark
// (docs/benchmarks-vs-etcd.md) against
// one system that bench/vs_etcd.py has started: tenure (Consul HTTP API),
// etcd 3.4 (native gRPC) or ZooKeeper 3.8 (its binary protocol). The same
// workload is written three times, once per client protocol, as close to
// what each system's own client library does as a closed loop allows.
//
// One process per measurement; the result is one JSON object on stdout.
// Every wait is bounded by a deadline: a server that stops answering makes
// the measurement fail with an error, never hang. The process ends with
// _exit after printing, without tearing down client libraries (gRPC streams
// still open at that point could otherwise block the exit).
//
// The "candidate" workload is a long-running election candidate for the
// failover measurement: it prints "HELD <ns>", "RENEWED <ns>" and "WAITING"
// lines (CLOCK_MONOTONIC nanoseconds) and runs until it is killed.
//
// TLS (--ca-file, with --cert-file and --key-file for servers that verify
// clients): tenure over HTTPS (bench/http_conn.h over OpenSSL), etcd over
// gRPC with SSL credentials; the server's certificate is verified against
// the CA and the address dialled (or --server-name). Clear text without.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenure::vs {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string system;    // tenure | etcd | zk
  std::string workload;  // kv_put | lock_many | lock_hot | session_pairs | keepalive |
                         // watch | idle_rss | candidate | conns
  std::string addr;      // IP:PORT of the server (the leader on a cluster)
  int clients = 1;
  double seconds = 5;                 // timed phase
  std::uint64_t max_ops = 5'000'000;  // operation bound of a timed phase
  int keys = 1000;                    // KV puts spread over this many keys
  int value_bytes = 100;
  int sessions = 1000;                 // keepalive: sessions/leases cycled through
  int watchers = 1000;                 // watch: watchers on one key
  int rounds = 10;                     // watch: writes, each waking every watcher
  int count = 100'000;                 // idle_rss: sessions/leases created
  int conns = 64;                      // etcd: most gRPC channels (TCP connections) used
  int ttl_s = 10;                      // candidate: session/lease TTL
  std::string key = "bench/election";  // candidate: the lock key (prefix for etcd)
  pid_t server_pid = -1;               // for RSS samples (idle_rss, watch)
  std::string ca_file;                 // TLS: PEM CAs for the server's certificate; "" = clear
  std::string cert_file, key_file;     // TLS: the client's certificate and key, optional
  std::string server_name;             // TLS: the name to verify; "" = the IP dialled
  // lock_hot on tenure: "consul" (acquire, and while refused a blocking query
  // on the key, as Consul's api.Lock) or "fair" (tenure's queued acquire:
  // PUT ?acquire=S&queue&wait=..., parked in the lock's FIFO queue).
  std::string mode = "consul";
  // etcd's client: "grpc" (gRPC's C++ library, etcd_side.cc) or "h2" (the
  // light client of etcd_h2.cc: the same requests on nghttp2 and OpenSSL).
  std::string client = "grpc";
};

// Metrics of one measurement, printed as JSON.
struct Result {
  std::vector<std::pair<std::string, double>> metrics;
  std::string error;  // empty: success
  std::string note;
  // The server lacks what the measurement needs (the fair acquire): `error`
  // says what; printed as "unsupported":true, exit status 3, no numbers.
  bool unsupported = false;
  void Add(std::string key, double value) { metrics.emplace_back(std::move(key), value); }
};

// Latency samples of one closed-loop phase.
struct Phase {
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  double seconds = 0;  // first start to last finish
  std::vector<std::int64_t> latency_ns;
};

// ops/s, p50/p99/max latency (ms) and the count, under `unit` ("puts"...);
// sets the error when the phase failed or did nothing.
void AddPhase(Result* r, Phase& phase);

// Handoff time of one hot lock: from the moment the holder sends its release
// to the moment the next holder learns it holds the lock (its acquire
// answered true, or etcd's waitDeletes finding no older key). All clients run
// on one thread, so one clock orders both ends. The first acquisition of a
// phase follows no release and is not counted.
class HandoffClock {
 public:
  void Released();
  void Acquired();
  // handoff_p50_ms, handoff_p99_ms and handoffs, when any was timed.
  void AddTo(Result* r);

 private:
  bool released_ = false;
  Clock::time_point release_sent_;
  std::vector<std::int64_t> ns_;
};
double PercentileMs(std::vector<std::int64_t>& sorted_ns, double q);  // sorted input
long RssKiB(pid_t pid);                                               // VmRSS of pid, -1 if unknown
std::int64_t MonoNs();  // CLOCK_MONOTONIC (what Python's time.monotonic_ns reads)

// The "conns" workload, new connections per second: each client connects
// (TCP, and over TLS the full handshake), sends one small request, closes,
// and starts again; an operation is the whole cycle. The note says which
// protocol the handshakes negotiated.
Result RunTenure(const Options& o);
Result RunEtcd(const Options& o);
Result RunEtcdLight(const Options& o);  // --client h2
Result RunZk(const Options& o);

}  // namespace tenure::vs
