// etcd's side of tenure_vs: etcd 3.4 driven through its native gRPC API
// (KV, Lease and Watch services of etcdserverpb, stubs generated at build
// time, see CMakeLists.txt), not its JSON gateway. All calls are
// asynchronous on one CompletionQueue polled by this one thread, the same
// one-thread closed-loop shape as the tenure and ZooKeeper clients.
//
// Each operation is what etcd's Go client (clientv3, 3.4) sends for it:
//   put        KV.Put
//   lock       concurrency.Mutex: Lease.LeaseGrant once per client, then per
//              cycle the Txn of Mutex.Lock (If CreateRevision(myKey) == 0
//              Then Put(myKey, lease) + Range(prefix, first created) Else
//              Range(myKey) + Range(prefix, first created)); when another
//              key was created first, waitDeletes (Range of the last key
//              created before ours, then a Watch on it from that revision
//              until its DELETE); Mutex.Unlock is KV.DeleteRange(myKey)
//   lease      Lease.LeaseGrant + Lease.LeaseRevoke; keepalive on a
//              Lease.LeaseKeepAlive stream per client (clientv3.KeepAlive)
//   watch      one Watch stream per watcher with one watch on the key
//   conns      a new channel per operation: connect (TCP, TLS and HTTP/2
//              handshakes), one serializable Range of a small key, close
// Clients are spread over at most --conns gRPC channels, each its own TCP
// connection (HTTP/2 multiplexes the clients' calls on it). With --ca-file
// every channel has SSL credentials (grpc::SslCredentials: the CA, and the
// client certificate when given), as clientv3 with --cacert/--cert/--key.
#include <fmt/format.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "driver.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace tenure::vs {
namespace {

namespace pb = etcdserverpb;
using SysClock = std::chrono::system_clock;

Result Failed(std::string error) {
  Result r;
  r.error = std::move(error);
  return r;
}

std::string StatusText(const grpc::Status& s) {
  return fmt::format("gRPC {} {}", static_cast<int>(s.error_code()), s.error_message());
}

// How every channel is made: clear text or SSL (SetUpCredentials).
struct ChannelSettings {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  std::string server_name;  // checked instead of the address dialled, when set
};
ChannelSettings& Settings() {
  static ChannelSettings settings;
  return settings;
}

bool ReadFile(const std::string& path, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

bool SetUpCredentials(const Options& o, std::string* error) {
  if (o.ca_file.empty()) return true;
  grpc::SslCredentialsOptions ssl;
  if (!ReadFile(o.ca_file, &ssl.pem_root_certs, error)) return false;
  if (!o.cert_file.empty() && (!ReadFile(o.cert_file, &ssl.pem_cert_chain, error) ||
                               !ReadFile(o.key_file, &ssl.pem_private_key, error))) {
    return false;
  }
  Settings().credentials = grpc::SslCredentials(ssl);
  Settings().server_name = o.server_name;
  return true;
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& addr) {
  grpc::ChannelArguments args;
  // Without this, channels with equal arguments share one connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(-1);
  if (!Settings().server_name.empty()) {
    args.SetSslTargetNameOverride(Settings().server_name);
  }
  return grpc::CreateCustomChannel(addr, Settings().credentials, args);
}

// One thread's completion loop: every tag is a heap callback.
class GrpcLoop {
 public:
  void* Tag(std::function<void(bool)> fn) { return new Callback{std::move(fn)}; }
  grpc::CompletionQueue* cq() { return &cq_; }

  // Dispatches completions until done() holds or `limit` passes.
  bool RunUntil(const std::function<bool()>& done, Clock::duration limit) {
    SysClock::time_point deadline =
        SysClock::now() + std::chrono::duration_cast<SysClock::duration>(limit);
    while (!done()) {
      void* tag = nullptr;
      bool ok = false;
      grpc::CompletionQueue::NextStatus st = cq_.AsyncNext(&tag, &ok, deadline);
      if (st == grpc::CompletionQueue::TIMEOUT) return done();
      if (st == grpc::CompletionQueue::SHUTDOWN) return false;
      auto* cb = static_cast<Callback*>(tag);
      std::function<void(bool)> fn = std::move(cb->fn);
      delete cb;
      fn(ok);
    }
    return true;
  }

  void After(Clock::duration d, std::function<void()> fn) {
    auto alarm = std::make_shared<grpc::Alarm>();
    alarm->Set(&cq_, SysClock::now() + std::chrono::duration_cast<SysClock::duration>(d),
               Tag([alarm, fn = std::move(fn)](bool) { fn(); }));
  }

 private:
  struct Callback {
    std::function<void(bool)> fn;
  };
  grpc::CompletionQueue cq_;
};

template <class Resp>
struct UnaryCall {
  grpc::ClientContext ctx;
  Resp resp;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader;
};

// One asynchronous unary call with a 30 s deadline; `done` gets the status
// and the response.
template <class Stub, class Req, class Resp>
void Call(GrpcLoop& loop, Stub* stub,
          std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> (Stub::*start)(
              grpc::ClientContext*, const Req&, grpc::CompletionQueue*),
          const Req& req,
          std::type_identity_t<std::function<void(const grpc::Status&, Resp&)>> done) {
  auto* call = new UnaryCall<Resp>();
  call->ctx.set_deadline(SysClock::now() + std::chrono::seconds(30));
  call->reader = (stub->*start)(&call->ctx, req, loop.cq());
  call->reader->StartCall();
  call->reader->Finish(&call->resp, &call->status, loop.Tag([call, done = std::move(done)](bool) {
    done(call->status, call->resp);
    delete call;
  }));
}

// A bidirectional stream (Watch or LeaseKeepAlive) with a write queue (gRPC
// allows one outstanding write) and a read loop that hands every response to
// on_read. A broken stream reports once through on_error.
template <class Req, class Resp>
class Stream {
 public:
  using Start = std::function<std::unique_ptr<grpc::ClientAsyncReaderWriter<Req, Resp>>(
      grpc::ClientContext*, grpc::CompletionQueue*)>;
  std::function<void(const Resp&)> on_read;
  std::function<void(const std::string&)> on_error;

  void Open(GrpcLoop& loop, const Start& start) {
    loop_ = &loop;
    rw_ = start(&ctx_, loop.cq());
    rw_->StartCall(loop.Tag([this](bool ok) {
      if (!ok) return Broken("stream did not start");
      started_ = true;
      Read();
      if (!out_.empty()) WriteFront();
    }));
  }
  void Write(Req req) {
    out_.push_back(std::move(req));
    if (started_ && out_.size() == 1) WriteFront();
  }

 private:
  void WriteFront() {
    rw_->Write(out_.front(), loop_->Tag([this](bool ok) {
      if (!ok) return Broken("stream write failed");
      out_.pop_front();
      if (!out_.empty()) WriteFront();
    }));
  }
  void Read() {
    rw_->Read(&resp_, loop_->Tag([this](bool ok) {
      if (!ok) return Broken("stream closed by the server");
      if (on_read) on_read(resp_);
      Read();
    }));
  }
  void Broken(const std::string& why) {
    if (broken_) return;
    broken_ = true;
    if (on_error) on_error(why);
  }

  GrpcLoop* loop_ = nullptr;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<Req, Resp>> rw_;
  Resp resp_;
  std::deque<Req> out_;
  bool started_ = false;
  bool broken_ = false;
};

using WatchStream = Stream<pb::WatchRequest, pb::WatchResponse>;
using KeepAliveStream = Stream<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>;

// gRPC channels, each its own TCP connection, with their stubs.
struct Conns {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<pb::KV::Stub>> kv;
  std::vector<std::unique_ptr<pb::Lease::Stub>> lease;
  std::vector<std::unique_ptr<pb::Watch::Stub>> watch;

  bool Open(const std::string& addr, int n, std::string* error) {
    for (int i = 0; i < n; ++i) {
      auto ch = NewChannel(addr);
      if (!ch->WaitForConnected(SysClock::now() + std::chrono::seconds(10))) {
        *error = fmt::format("gRPC channel {} to {} did not connect within 10 s", i, addr);
        return false;
      }
      kv.push_back(pb::KV::NewStub(ch));
      lease.push_back(pb::Lease::NewStub(ch));
      watch.push_back(pb::Watch::NewStub(ch));
      channels.push_back(std::move(ch));
    }
    return true;
  }
  std::size_t size() const { return channels.size(); }
};

// The end of a prefix range: the prefix with its last byte incremented.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& c = prefix.back();
    if (static_cast<unsigned char>(c) < 0xff) {
      c = static_cast<char>(c + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// --- closed loop ------------------------------------------------------------

struct EClient {
  int index = 0;
  pb::KV::Stub* kv = nullptr;
  pb::Lease::Stub* lease = nullptr;
  pb::Watch::Stub* watch_stub = nullptr;
  Clock::time_point op_start;
  std::uint64_t rng = 0;
  std::int64_t lease_id = 0;
  std::string prefix, my_key;
  std::int64_t my_rev = 0;
  std::vector<std::int64_t> leases;  // keepalive: the leases it renews
  std::size_t next = 0;
  int pending = 0;  // keepalive: write and read of one renewal
  std::unique_ptr<WatchStream> watch;
  std::unique_ptr<KeepAliveStream> keepalive;
  std::int64_t watch_id = -1;   // the watch of the current waitDelete
  bool creating_watch = false;  // its create request is in flight
  std::function<void()> on_deleted;
};

class ClosedLoop {
 public:
  ClosedLoop(GrpcLoop& loop, Conns& conns, int clients)
      : loop_(loop), clients_(static_cast<std::size_t>(clients)) {
    for (int i = 0; i < clients; ++i) {
      EClient& c = clients_[static_cast<std::size_t>(i)];
      c.index = i;
      if (conns.size() > 0) {  // none: the clients make their own (NewConns)
        std::size_t k = static_cast<std::size_t>(i) % conns.size();
        c.kv = conns.kv[k].get();
        c.lease = conns.lease[k].get();
        c.watch_stub = conns.watch[k].get();
      }
      c.rng = 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1);
    }
  }
  virtual ~ClosedLoop() = default;

  Phase Run(Clock::duration duration, std::uint64_t max_ops) {
    phase_ = Phase();
    phase_.latency_ns.reserve(
        static_cast<std::size_t>(std::min<std::uint64_t>(max_ops, 1'000'000)));
    started_ = 0;
    max_ops_ = max_ops;
    active_ = 0;
    start_ = last_ = Clock::now();
    deadline_ = start_ + duration;
    for (EClient& c : clients_) {
      if (started_ >= max_ops_) break;
      ++active_;
      StartNext(c);
    }
    if (!loop_.RunUntil([this] { return active_ == 0; }, duration + std::chrono::seconds(30))) {
      ++phase_.errors;
      if (phase_.first_error.empty()) {
        phase_.first_error =
            fmt::format("{} operations still in flight 30 s after the phase", active_);
      }
      last_ = Clock::now();
    }
    phase_.seconds = std::chrono::duration<double>(last_ - start_).count();
    return std::move(phase_);
  }
  std::vector<EClient>& clients() { return clients_; }

 protected:
  virtual void StartOp(EClient& c) = 0;
  void FinishOp(EClient& c, const std::string& error) {
    Clock::time_point now = Clock::now();
    last_ = now;
    if (error.empty()) {
      ++phase_.ok;
      phase_.latency_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.op_start).count());
      if (now < deadline_ && started_ < max_ops_) return StartNext(c);
    } else if (phase_.errors++ == 0) {
      phase_.first_error = fmt::format("client {}: {}", c.index, error);
    }
    --active_;
  }
  GrpcLoop& loop_;

 private:
  void StartNext(EClient& c) {
    ++started_;
    c.op_start = Clock::now();
    StartOp(c);
  }
  std::vector<EClient> clients_;
  Phase phase_;
  Clock::time_point start_, deadline_, last_;
  std::uint64_t started_ = 0, max_ops_ = 0;
  int active_ = 0;
};

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// --- KV put -----------------------------------------------------------------

class KvPut : public ClosedLoop {
 public:
  KvPut(GrpcLoop& loop, Conns& conns, const Options& o) : ClosedLoop(loop, conns, o.clients) {
    std::string value(static_cast<std::size_t>(o.value_bytes), 'v');
    for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);
    for (int k = 0; k < o.keys; ++k) {
      pb::PutRequest req;
      req.set_key(fmt::format("bench/k{:04}", k));
      req.set_value(value);
      reqs_.push_back(std::move(req));
    }
  }

 protected:
  void StartOp(EClient& c) override {
    c.rng ^= c.rng >> 12;
    c.rng ^= c.rng << 25;
    c.rng ^= c.rng >> 27;
    const pb::PutRequest& req = reqs_[(c.rng * 0x2545F4914F6CDD1DULL) % reqs_.size()];
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncPut, req,
         [this, &c](const grpc::Status& s, pb::PutResponse&) {
           FinishOp(c, s.ok() ? "" : "put: " + StatusText(s));
         });
  }

 private:
  std::vector<pb::PutRequest> reqs_;
};

// --- new connections ----------------------------------------------------------

// Every operation on a channel of its own (its own TCP connection: the
// local subchannel pool shares none), dropped when the call completes.
// gRPC connects on the first call; no SSL session is kept between channels
// (no session cache is configured), so every TLS handshake is a full one.
// The call is a serializable Range (etcdctl get --consistency=s), which the
// member answers without a raft round: the connection is what is measured.
class NewConns : public ClosedLoop {
 public:
  NewConns(GrpcLoop& loop, Conns& none, int clients, std::string addr)
      : ClosedLoop(loop, none, clients), addr_(std::move(addr)) {
    req_.set_key("bench/conn");
    req_.set_serializable(true);
  }

 protected:
  void StartOp(EClient& c) override {
    std::shared_ptr<grpc::Channel> channel = NewChannel(addr_);
    std::shared_ptr<pb::KV::Stub> stub = pb::KV::NewStub(channel);
    Call(loop_, stub.get(), &pb::KV::Stub::PrepareAsyncRange, req_,
         [this, &c, channel, stub](const grpc::Status& s, pb::RangeResponse& r) {
           if (!s.ok()) return FinishOp(c, "range: " + StatusText(s));
           FinishOp(c, r.kvs_size() == 1 ? "" : "range: bench/conn missing");
         });
  }

 private:
  std::string addr_;
  pb::RangeRequest req_;
};

// --- leases -----------------------------------------------------------------

class LeaseGranter : public ClosedLoop {
 public:
  LeaseGranter(GrpcLoop& loop, Conns& conns, int clients, std::int64_t ttl,
               std::vector<std::int64_t>* ids)
      : ClosedLoop(loop, conns, clients), ttl_(ttl), ids_(ids) {}

 protected:
  void StartOp(EClient& c) override {
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl_);
    Call(loop_, c.lease, &pb::Lease::Stub::PrepareAsyncLeaseGrant, req,
         [this, &c](const grpc::Status& s, pb::LeaseGrantResponse& r) {
           if (!s.ok() || !r.error().empty())
             return FinishOp(c, "lease grant: " + StatusText(s) + r.error());
           if (ids_) ids_->push_back(r.id());
           c.lease_id = r.id();
           FinishOp(c, "");
         });
  }

 private:
  std::int64_t ttl_;
  std::vector<std::int64_t>* ids_;
};

class LeasePairs : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;

 protected:
  void StartOp(EClient& c) override {
    pb::LeaseGrantRequest req;
    req.set_ttl(60);
    Call(loop_, c.lease, &pb::Lease::Stub::PrepareAsyncLeaseGrant, req,
         [this, &c](const grpc::Status& s, pb::LeaseGrantResponse& r) {
           if (!s.ok() || !r.error().empty())
             return FinishOp(c, "lease grant: " + StatusText(s) + r.error());
           pb::LeaseRevokeRequest rev;
           rev.set_id(r.id());
           Call(loop_, c.lease, &pb::Lease::Stub::PrepareAsyncLeaseRevoke, rev,
                [this, &c](const grpc::Status& s2, pb::LeaseRevokeResponse&) {
                  FinishOp(c, s2.ok() ? "" : "lease revoke: " + StatusText(s2));
                });
         });
  }
};

class KeepAlive : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;
  void OpenStreams(std::string* broken) {
    for (EClient& c : clients()) {
      c.keepalive = std::make_unique<KeepAliveStream>();
      EClient* cp = &c;
      c.keepalive->on_read = [this, cp](const pb::LeaseKeepAliveResponse& r) {
        if (r.ttl() <= 0) {
          error_ = fmt::format("lease {:x} expired", r.id());
        }
        Half(*cp);
      };
      c.keepalive->on_error = [this, cp, broken](const std::string& why) {
        *broken = why;
        if (cp->pending > 0) {
          cp->pending = 0;
          FinishOp(*cp, "keepalive stream: " + why);
        }
      };
      pb::Lease::Stub* stub = c.lease;
      c.keepalive->Open(loop_, [stub](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncLeaseKeepAlive(ctx, cq);
      });
    }
  }

 protected:
  void StartOp(EClient& c) override {
    pb::LeaseKeepAliveRequest req;
    req.set_id(c.leases[c.next]);
    c.next = (c.next + 1) % c.leases.size();
    c.pending = 1;  // the response; writes complete on their own
    c.keepalive->Write(std::move(req));
  }

 private:
  void Half(EClient& c) {
    if (c.pending == 0) return;
    c.pending = 0;
    std::string e = std::move(error_);
    error_.clear();
    FinishOp(c, e);
  }
  std::string error_;
};

// --- locks (concurrency.Mutex) ----------------------------------------------

class LockCycle : public ClosedLoop {
 public:
  LockCycle(GrpcLoop& loop, Conns& conns, int clients, bool hot)
      : ClosedLoop(loop, conns, clients), hot_(hot) {
    for (EClient& c : this->clients()) {
      c.prefix = hot ? std::string("bench/hot/") : fmt::format("bench/lock/{}/", c.index);
    }
  }
  std::uint64_t waits = 0;
  HandoffClock handoff;  // hot only

 protected:
  void StartOp(EClient& c) override {
    c.my_key = fmt::format("{}{:x}", c.prefix, c.lease_id);
    pb::TxnRequest txn;
    pb::Compare* cmp = txn.add_compare();
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_target(pb::Compare::CREATE);
    cmp->set_key(c.my_key);
    cmp->set_create_revision(0);
    pb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(c.my_key);
    put->set_lease(c.lease_id);
    FirstCreated(c, txn.add_success()->mutable_request_range());
    txn.add_failure()->mutable_request_range()->set_key(c.my_key);
    FirstCreated(c, txn.add_failure()->mutable_request_range());
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncTxn, txn,
         [this, &c](const grpc::Status& s, pb::TxnResponse& r) {
           if (!s.ok() || r.responses_size() != 2) return FinishOp(c, "lock txn: " + StatusText(s));
           c.my_rev = r.header().revision();
           if (!r.succeeded()) {
             const auto& mine = r.responses(0).response_range();
             if (mine.kvs_size() == 0) return FinishOp(c, "lock txn: own key missing");
             c.my_rev = mine.kvs(0).create_revision();
           }
           const auto& owner = r.responses(1).response_range();
           if (owner.kvs_size() == 0 || owner.kvs(0).create_revision() == c.my_rev) return Held(c);
           ++waits;
           WaitDeletes(c);
         });
  }

 private:
  void FirstCreated(EClient& c, pb::RangeRequest* r) {
    r->set_key(c.prefix);
    r->set_range_end(PrefixEnd(c.prefix));
    r->set_sort_target(pb::RangeRequest::CREATE);
    r->set_sort_order(pb::RangeRequest::ASCEND);
    r->set_limit(1);
  }
  // waitDeletes: the newest key created before ours, until there is none.
  void WaitDeletes(EClient& c) {
    pb::RangeRequest r;
    r.set_key(c.prefix);
    r.set_range_end(PrefixEnd(c.prefix));
    r.set_sort_target(pb::RangeRequest::CREATE);
    r.set_sort_order(pb::RangeRequest::DESCEND);
    r.set_limit(1);
    r.set_max_create_revision(c.my_rev - 1);
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncRange, r,
         [this, &c](const grpc::Status& s, pb::RangeResponse& resp) {
           if (!s.ok()) return FinishOp(c, "lock range: " + StatusText(s));
           if (resp.kvs_size() == 0) return Held(c);
           WaitDelete(c, resp.kvs(0).key(), resp.header().revision());
         });
  }
  void WaitDelete(EClient& c, const std::string& key, std::int64_t rev) {
    if (!c.watch) OpenWatch(c);
    c.on_deleted = [this, &c] { WaitDeletes(c); };
    c.creating_watch = true;
    pb::WatchRequest req;
    auto* create = req.mutable_create_request();
    create->set_key(key);
    create->set_start_revision(rev);
    c.watch->Write(std::move(req));
  }
  void OpenWatch(EClient& c) {
    c.watch = std::make_unique<WatchStream>();
    EClient* cp = &c;
    c.watch->on_read = [cp](const pb::WatchResponse& r) {
      EClient& cl = *cp;
      if (r.created() && cl.creating_watch) {
        cl.creating_watch = false;
        cl.watch_id = r.watch_id();
      }
      if (r.canceled() || r.watch_id() != cl.watch_id || !cl.on_deleted) return;
      for (const auto& ev : r.events()) {
        if (ev.type() == mvccpb::Event::DELETE) {
          pb::WatchRequest cancel;
          cancel.mutable_cancel_request()->set_watch_id(cl.watch_id);
          cl.watch->Write(std::move(cancel));
          cl.watch_id = -1;
          auto next = std::move(cl.on_deleted);
          cl.on_deleted = nullptr;
          next();
          return;
        }
      }
    };
    c.watch->on_error = [this, cp](const std::string& why) {
      if (cp->on_deleted) {
        cp->on_deleted = nullptr;
        FinishOp(*cp, "lock watch: " + why);
      }
    };
    pb::Watch::Stub* stub = c.watch_stub;
    c.watch->Open(loop_, [stub](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
      return stub->PrepareAsyncWatch(ctx, cq);
    });
  }
  // Lock() returned: the lock is held; the cycle releases it at once.
  void Held(EClient& c) {
    if (hot_) handoff.Acquired();
    Unlock(c);
  }
  void Unlock(EClient& c) {
    if (hot_) handoff.Released();
    pb::DeleteRangeRequest del;
    del.set_key(c.my_key);
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncDeleteRange, del,
         [this, &c](const grpc::Status& s, pb::DeleteRangeResponse&) {
           FinishOp(c, s.ok() ? "" : "unlock: " + StatusText(s));
         });
  }
  bool hot_;
};

// --- workloads --------------------------------------------------------------

int ConnCount(const Options& o, int clients) { return std::max(1, std::min(clients, o.conns)); }

Result RunKvPut(GrpcLoop& loop, const Options& o) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, o.clients), &error)) return Failed(error);
  KvPut w(loop, conns, o);
  Phase p = w.Run(Seconds(o.seconds), o.max_ops);
  Result r;
  AddPhase(&r, p);
  r.Add("conns", static_cast<double>(conns.size()));
  return r;
}

Result RunNewConns(GrpcLoop& loop, const Options& o) {
  {
    Conns setup;
    std::string error;
    if (!setup.Open(o.addr, 1, &error)) return Failed(error);
    pb::PutRequest req;
    req.set_key("bench/conn");
    req.set_value("x");
    bool done = false;
    grpc::Status status;
    Call(loop, setup.kv[0].get(), &pb::KV::Stub::PrepareAsyncPut, req,
         [&](const grpc::Status& s, pb::PutResponse&) {
           status = s;
           done = true;
         });
    if (!loop.RunUntil([&] { return done; }, std::chrono::seconds(30)) || !status.ok()) {
      return Failed("setup put: " + StatusText(status));
    }
  }
  Conns none;
  NewConns w(loop, none, o.clients, o.addr);
  Phase p = w.Run(Seconds(o.seconds), o.max_ops);
  Result r;
  AddPhase(&r, p);
  r.note = o.ca_file.empty() ? "clear text" : "TLS (gRPC SSL credentials)";
  return r;
}

Result RunLock(GrpcLoop& loop, const Options& o, bool hot) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, o.clients), &error)) return Failed(error);
  LockCycle w(loop, conns, o.clients, hot);
  {
    // Setup, not timed: one lease per client (concurrency.NewSession, TTL 60 s).
    LeaseGranter g(loop, conns, o.clients, 60, nullptr);
    Phase made = g.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(o.clients));
    if (made.errors > 0 || made.ok != static_cast<std::uint64_t>(o.clients))
      return Failed("setup: " + made.first_error);
    for (std::size_t i = 0; i < g.clients().size(); ++i)
      w.clients()[i].lease_id = g.clients()[i].lease_id;
  }
  Phase p = w.Run(Seconds(o.seconds), o.max_ops);
  Result r;
  AddPhase(&r, p);
  r.Add("refusals", static_cast<double>(w.waits));
  if (hot) w.handoff.AddTo(&r);
  return r;
}

Result RunSessionPairs(GrpcLoop& loop, const Options& o) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, o.clients), &error)) return Failed(error);
  LeasePairs w(loop, conns, o.clients);
  Phase p = w.Run(Seconds(o.seconds), o.max_ops);
  Result r;
  AddPhase(&r, p);
  return r;
}

Result RunKeepalive(GrpcLoop& loop, const Options& o) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, o.clients), &error)) return Failed(error);
  std::vector<std::int64_t> ids;
  {
    LeaseGranter g(loop, conns, std::min(64, o.sessions), 60, &ids);
    Phase made = g.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(o.sessions));
    if (made.errors > 0 || ids.size() != static_cast<std::size_t>(o.sessions)) {
      return Failed(fmt::format("setup: granted {} of {} leases: {}", ids.size(), o.sessions,
                                made.first_error));
    }
  }
  KeepAlive w(loop, conns, o.clients);
  for (std::size_t i = 0; i < ids.size(); ++i)
    w.clients()[i % w.clients().size()].leases.push_back(ids[i]);
  for (EClient& c : w.clients()) {
    if (c.leases.empty()) c.leases.push_back(ids[0]);
  }
  std::string broken;
  w.OpenStreams(&broken);
  Phase p = w.Run(Seconds(o.seconds), o.max_ops);
  Result r;
  AddPhase(&r, p);
  if (r.error.empty() && !broken.empty()) r.error = "keepalive stream: " + broken;
  return r;
}

Result RunIdleRss(GrpcLoop& loop, const Options& o) {
  long before = RssKiB(o.server_pid);
  if (before < 0) return Failed("cannot read the server's VmRSS (--server-pid)");
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, 64), &error)) return Failed(error);
  LeaseGranter g(loop, conns, 64, 86400, nullptr);
  Phase made = g.Run(std::chrono::seconds(300), static_cast<std::uint64_t>(o.count));
  loop.RunUntil([] { return false; }, std::chrono::seconds(2));
  long after = RssKiB(o.server_pid);
  Result r;
  r.Add("created", static_cast<double>(made.ok));
  r.Add("create_per_s", made.seconds > 0 ? static_cast<double>(made.ok) / made.seconds : 0);
  r.Add("rss_before_mib", before / 1024.0);
  r.Add("rss_after_mib", after / 1024.0);
  r.Add("bytes_per_item",
        made.ok ? static_cast<double>(after - before) * 1024.0 / static_cast<double>(made.ok) : 0);
  if (made.errors > 0) {
    r.error = fmt::format("{} errors; first: {}", made.errors, made.first_error);
  } else if (made.ok != static_cast<std::uint64_t>(o.count)) {
    r.error = fmt::format("granted only {} of {} leases in 300 s", made.ok, o.count);
  }
  return r;
}

// W watch streams, one watch each on bench/wake, then one Put per round.
Result RunWatch(GrpcLoop& loop, const Options& o) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, ConnCount(o, o.watchers) + 1, &error)) return Failed(error);
  const std::string key = "bench/wake";
  auto put = [&](const std::string& value, std::function<void(const grpc::Status&)> done) {
    pb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    Call(loop, conns.kv.back().get(), &pb::KV::Stub::PrepareAsyncPut, req,
         [done = std::move(done)](const grpc::Status& s, pb::PutResponse&) { done(s); });
  };
  bool put_done = false;
  grpc::Status put_status;
  put("initial", [&](const grpc::Status& s) {
    put_status = s;
    put_done = true;
  });
  if (!loop.RunUntil([&] { return put_done; }, std::chrono::seconds(30)) || !put_status.ok()) {
    return Failed("initial put: " + StatusText(put_status));
  }
  long rss_before = RssKiB(o.server_pid);
  std::size_t created = 0, woken = 0, errors = 0;
  std::string first_error;
  bool fired = false;
  Clock::time_point fire_time;
  std::int64_t round_last = 0;
  std::vector<std::int64_t> wake_ns, last_ns;
  std::vector<std::unique_ptr<WatchStream>> watchers;
  for (int i = 0; i < o.watchers; ++i) {
    auto w = std::make_unique<WatchStream>();
    w->on_read = [&, i](const pb::WatchResponse& r) {
      if (r.created()) {
        ++created;
        return;
      }
      for (int e = 0; e < r.events_size(); ++e) {
        std::int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - fire_time).count();
        ++woken;
        if (!fired || r.events(e).type() != mvccpb::Event::PUT) {
          if (errors++ == 0)
            first_error = fmt::format("watcher {}: unexpected event (fired {})", i, fired);
        } else {
          wake_ns.push_back(ns);
          round_last = std::max(round_last, ns);
        }
      }
    };
    w->on_error = [&, i](const std::string& why) {
      if (errors++ == 0) first_error = fmt::format("watcher {}: {}", i, why);
    };
    pb::Watch::Stub* stub = conns.watch[static_cast<std::size_t>(i) % (conns.size() - 1)].get();
    w->Open(loop, [stub](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
      return stub->PrepareAsyncWatch(ctx, cq);
    });
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(key);
    w->Write(std::move(req));
    watchers.push_back(std::move(w));
  }
  const std::size_t want = watchers.size();
  if (!loop.RunUntil([&] { return created == want || errors > 0; }, std::chrono::seconds(120)) ||
      errors > 0) {
    return Failed(
        fmt::format("only {} of {} watches created within 120 s: {}", created, want, first_error));
  }
  long rss_parked = RssKiB(o.server_pid);
  for (int round = 0; round < o.rounds && errors == 0; ++round) {
    woken = 0;
    round_last = 0;
    bool acked = false;
    fire_time = Clock::now();
    fired = true;
    put(fmt::format("round-{}", round), [&](const grpc::Status& s) {
      if (!s.ok() && errors++ == 0) first_error = "waking put: " + StatusText(s);
      acked = true;
    });
    if (!loop.RunUntil([&] { return (acked && woken >= want) || errors > 0; },
                       std::chrono::seconds(60))) {
      return Failed(fmt::format("round {}: {} of {} watchers notified within 60 s of the write",
                                round, woken, want));
    }
    fired = false;
    last_ns.push_back(round_last);
    // The next round starts once this one is fully delivered; etcd watches
    // stay armed, so nothing else is needed.
  }
  Result r;
  std::sort(wake_ns.begin(), wake_ns.end());
  std::sort(last_ns.begin(), last_ns.end());
  r.Add("wake_p50_ms", PercentileMs(wake_ns, 0.5));
  r.Add("wake_p99_ms", PercentileMs(wake_ns, 0.99));
  r.Add("last_median_ms", PercentileMs(last_ns, 0.5));
  r.Add("last_max_ms", PercentileMs(last_ns, 1.0));
  r.Add("wakeups", static_cast<double>(wake_ns.size()));
  r.Add("conns", static_cast<double>(conns.size() - 1));
  if (rss_before > 0 && rss_parked > 0) {
    r.Add("rss_before_mib", rss_before / 1024.0);
    r.Add("rss_parked_mib", rss_parked / 1024.0);
    r.Add("bytes_per_watcher", static_cast<double>(rss_parked - rss_before) * 1024.0 / o.watchers);
  }
  if (errors > 0) r.error = fmt::format("{} errors; first: {}", errors, first_error);
  return r;
}

// An election candidate as clientv3's concurrency package runs it: a lease
// with the TTL kept alive every TTL/3 on a LeaseKeepAlive stream, then
// Mutex.Lock on the prefix (the same transaction and waitDeletes as above).
Result RunCandidate(GrpcLoop& loop, const Options& o) {
  Conns conns;
  std::string error;
  if (!conns.Open(o.addr, 1, &error)) return Failed(error);
  std::string failure;
  bool granted = false;
  std::int64_t lease_id = 0;
  {
    pb::LeaseGrantRequest req;
    req.set_ttl(o.ttl_s);
    Call(loop, conns.lease[0].get(), &pb::Lease::Stub::PrepareAsyncLeaseGrant, req,
         [&](const grpc::Status& s, pb::LeaseGrantResponse& r) {
           if (!s.ok()) failure = "lease grant: " + StatusText(s);
           lease_id = r.id();
           granted = true;
         });
    if (!loop.RunUntil([&] { return granted; }, std::chrono::seconds(30)) || !failure.empty()) {
      return Failed(failure.empty() ? "lease grant timed out" : failure);
    }
  }
  KeepAliveStream ka;
  ka.on_read = [&](const pb::LeaseKeepAliveResponse& r) {
    if (r.ttl() <= 0) {
      failure = "lease expired";
      return;
    }
    fmt::print("RENEWED {}\n", MonoNs());
    std::fflush(stdout);
  };
  ka.on_error = [&](const std::string& why) { failure = "keepalive: " + why; };
  ka.Open(loop, [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
    return conns.lease[0]->PrepareAsyncLeaseKeepAlive(ctx, cq);
  });
  std::function<void()> keep = [&] {
    pb::LeaseKeepAliveRequest req;
    req.set_id(lease_id);
    ka.Write(std::move(req));
    loop.After(std::chrono::milliseconds(o.ttl_s * 1000 / 3), keep);
  };
  loop.After(std::chrono::milliseconds(o.ttl_s * 1000 / 3), keep);

  // LockCycle unlocks right after acquiring; a candidate must hold instead,
  // so it runs the transaction itself and waits with the same waitDeletes.
  struct Lock {
    GrpcLoop& loop;
    pb::KV::Stub* kv;
    pb::Watch::Stub* watch_stub;
    std::string prefix, my_key;
    std::int64_t my_rev = 0;
    std::string* failure;
    WatchStream watch;
    bool watch_open = false;
    std::int64_t watch_id = -1;
    bool creating = false;
    std::function<void()> on_deleted;
    bool waiting_printed = false;

    void Acquire(std::int64_t lease) {
      my_key = fmt::format("{}{:x}", prefix, lease);
      pb::TxnRequest txn;
      pb::Compare* cmp = txn.add_compare();
      cmp->set_result(pb::Compare::EQUAL);
      cmp->set_target(pb::Compare::CREATE);
      cmp->set_key(my_key);
      cmp->set_create_revision(0);
      pb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(my_key);
      put->set_lease(lease);
      First(txn.add_success()->mutable_request_range(), pb::RangeRequest::ASCEND, 0);
      txn.add_failure()->mutable_request_range()->set_key(my_key);
      First(txn.add_failure()->mutable_request_range(), pb::RangeRequest::ASCEND, 0);
      Call(loop, kv, &pb::KV::Stub::PrepareAsyncTxn, txn,
           [this](const grpc::Status& s, pb::TxnResponse& r) {
             if (!s.ok() || r.responses_size() != 2) {
               *failure = "lock txn: " + StatusText(s);
               return;
             }
             my_rev = r.header().revision();
             if (!r.succeeded()) my_rev = r.responses(0).response_range().kvs(0).create_revision();
             const auto& owner = r.responses(1).response_range();
             if (owner.kvs_size() == 0 || owner.kvs(0).create_revision() == my_rev) return Held();
             WaitDeletes();
           });
    }
    void First(pb::RangeRequest* r, pb::RangeRequest::SortOrder order, std::int64_t max_rev) {
      r->set_key(prefix);
      r->set_range_end(PrefixEnd(prefix));
      r->set_sort_target(pb::RangeRequest::CREATE);
      r->set_sort_order(order);
      r->set_limit(1);
      if (max_rev > 0) r->set_max_create_revision(max_rev);
    }
    void WaitDeletes() {
      pb::RangeRequest r;
      First(&r, pb::RangeRequest::DESCEND, my_rev - 1);
      Call(loop, kv, &pb::KV::Stub::PrepareAsyncRange, r,
           [this](const grpc::Status& s, pb::RangeResponse& resp) {
             if (!s.ok()) {
               *failure = "range: " + StatusText(s);
               return;
             }
             if (resp.kvs_size() == 0) return Held();
             if (!waiting_printed) {
               waiting_printed = true;
               fmt::print("WAITING {}\n", MonoNs());
               std::fflush(stdout);
             }
             if (!watch_open) Open();
             on_deleted = [this] { WaitDeletes(); };
             creating = true;
             pb::WatchRequest req;
             req.mutable_create_request()->set_key(resp.kvs(0).key());
             req.mutable_create_request()->set_start_revision(resp.header().revision());
             watch.Write(std::move(req));
           });
    }
    void Open() {
      watch_open = true;
      watch.on_read = [this](const pb::WatchResponse& r) {
        if (r.created() && creating) {
          creating = false;
          watch_id = r.watch_id();
        }
        if (r.canceled() || r.watch_id() != watch_id || !on_deleted) return;
        for (const auto& ev : r.events()) {
          if (ev.type() == mvccpb::Event::DELETE) {
            pb::WatchRequest cancel;
            cancel.mutable_cancel_request()->set_watch_id(watch_id);
            watch.Write(std::move(cancel));
            watch_id = -1;
            auto next = std::move(on_deleted);
            on_deleted = nullptr;
            next();
            return;
          }
        }
      };
      watch.on_error = [this](const std::string& why) { *failure = "watch: " + why; };
      pb::Watch::Stub* stub = watch_stub;
      watch.Open(loop, [stub](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncWatch(ctx, cq);
      });
    }
    void Held() {
      fmt::print("HELD {}\n", MonoNs());
      std::fflush(stdout);
    }
  };
  Lock lock{loop,
            conns.kv[0].get(),
            conns.watch[0].get(),
            o.key + "/",
            "",
            0,
            &failure,
            {},
            false,
            -1,
            false,
            nullptr,
            false};
  lock.Acquire(lease_id);
  loop.RunUntil([&] { return !failure.empty(); }, std::chrono::hours(24));
  return Failed(failure.empty() ? "candidate ran for 24 h" : failure);
}

}  // namespace

Result RunEtcd(const Options& o) {
  std::string error;
  if (!SetUpCredentials(o, &error)) return Failed("TLS: " + error);
  GrpcLoop loop;
  if (o.workload == "kv_put") return RunKvPut(loop, o);
  if (o.workload == "lock_many") return RunLock(loop, o, false);
  if (o.workload == "lock_hot") return RunLock(loop, o, true);
  if (o.workload == "session_pairs") return RunSessionPairs(loop, o);
  if (o.workload == "keepalive") return RunKeepalive(loop, o);
  if (o.workload == "watch") return RunWatch(loop, o);
  if (o.workload == "idle_rss") return RunIdleRss(loop, o);
  if (o.workload == "candidate") return RunCandidate(loop, o);
  if (o.workload == "conns") return RunNewConns(loop, o);
  return Failed("etcd: unknown workload " + o.workload);
}

}  // namespace tenure::vs
