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
#include "etcd_workload.h"

namespace tenure::vs {
namespace {

namespace pb = etcdserverpb;
using etcd_workload::DeleteWait;
using etcd_workload::PrefixEnd;
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
  DeleteWait wait;  // lock_hot: the current waitDelete
};

// etcd_workload's closed loop on this thread's completion queue.
class ClosedLoop : public etcd_workload::ClosedLoop<EClient> {
 public:
  ClosedLoop(GrpcLoop& loop, Conns& conns, int clients)
      : etcd_workload::ClosedLoop<EClient>(clients), loop_(loop) {
    if (conns.size() == 0) return;  // none: the clients make their own (NewConns)
    for (EClient& c : this->clients()) {
      std::size_t k = static_cast<std::size_t>(c.index) % conns.size();
      c.kv = conns.kv[k].get();
      c.lease = conns.lease[k].get();
      c.watch_stub = conns.watch[k].get();
    }
  }

 protected:
  bool Drive(const std::function<bool()>& done, Clock::duration limit, std::string*) override {
    return loop_.RunUntil(done, limit);
  }
  GrpcLoop& loop_;
};

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// --- KV put -----------------------------------------------------------------

class KvPut : public ClosedLoop {
 public:
  KvPut(GrpcLoop& loop, Conns& conns, const Options& o)
      : ClosedLoop(loop, conns, o.clients), reqs_(etcd_workload::PutRequests(o)) {}

 protected:
  void StartOp(EClient& c) override {
    const pb::PutRequest& req = reqs_[etcd_workload::NextPut(&c.rng, reqs_.size())];
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
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncTxn,
         etcd_workload::MutexLockTxn(c.prefix, c.my_key, c.lease_id),
         [this, &c](const grpc::Status& s, pb::TxnResponse& r) {
           if (!s.ok()) return FinishOp(c, "lock txn: " + StatusText(s));
           etcd_workload::LockTxnAnswer a = etcd_workload::ReadMutexLockTxn(r);
           if (!a.error.empty()) return FinishOp(c, "lock txn: " + a.error);
           c.my_rev = a.my_rev;
           if (a.held) return Held(c);
           ++waits;
           WaitDeletes(c);
         });
  }

 private:
  // waitDeletes: the newest key created before ours, until there is none.
  void WaitDeletes(EClient& c) {
    Call(loop_, c.kv, &pb::KV::Stub::PrepareAsyncRange,
         etcd_workload::OlderKeyRange(c.prefix, c.my_rev),
         [this, &c](const grpc::Status& s, pb::RangeResponse& resp) {
           if (!s.ok()) return FinishOp(c, "lock range: " + StatusText(s));
           if (resp.kvs_size() == 0) return Held(c);
           if (!c.watch) OpenWatch(c);
           c.watch->Write(c.wait.Create(resp.kvs(0).key(), resp.header().revision(),
                                        [this, &c] { WaitDeletes(c); }));
         });
  }
  void OpenWatch(EClient& c) {
    c.watch = std::make_unique<WatchStream>();
    EClient* cp = &c;
    c.watch->on_read = [cp](const pb::WatchResponse& r) {
      pb::WatchRequest cancel;
      if (std::function<void()> next = cp->wait.OnAnswer(r, &cancel)) {
        cp->watch->Write(std::move(cancel));
        next();
      }
    };
    c.watch->on_error = [this, cp](const std::string& why) {
      if (cp->wait.Abandon()) FinishOp(*cp, "lock watch: " + why);
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
  etcd_workload::FanOut count(static_cast<std::size_t>(o.watchers));
  std::vector<std::unique_ptr<WatchStream>> watchers;
  for (int i = 0; i < o.watchers; ++i) {
    auto w = std::make_unique<WatchStream>();
    w->on_read = [&count, i](const pb::WatchResponse& r) { count.OnAnswer(i, r); };
    w->on_error = [&count, i](const std::string& why) {
      count.Fail(fmt::format("watcher {}: {}", i, why));
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
  if (!loop.RunUntil([&] { return count.all_created() || count.failed(); },
                     std::chrono::seconds(120)) ||
      count.failed()) {
    return Failed(fmt::format("only {} of {} watches created within 120 s: {}", count.created(),
                              o.watchers, count.first_error()));
  }
  long rss_parked = RssKiB(o.server_pid);
  for (int round = 0; round < o.rounds && !count.failed(); ++round) {
    bool acked = false;
    count.StartRound();
    put(fmt::format("round-{}", round), [&](const grpc::Status& s) {
      if (!s.ok()) count.Fail("waking put: " + StatusText(s));
      acked = true;
    });
    if (!loop.RunUntil([&] { return (acked && count.all_woken()) || count.failed(); },
                       std::chrono::seconds(60))) {
      return Failed(fmt::format("round {}: {} of {} watchers notified within 60 s of the write",
                                round, count.woken(), o.watchers));
    }
    count.EndRound();
  }
  Result r;
  count.AddTo(&r, conns.size() - 1, rss_before, rss_parked);
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
    std::string prefix;
    std::string* failure;
    std::string my_key;
    std::int64_t my_rev = 0;
    WatchStream watch;
    bool watch_open = false;
    DeleteWait wait;
    bool waiting_printed = false;

    void Acquire(std::int64_t lease) {
      my_key = fmt::format("{}{:x}", prefix, lease);
      Call(loop, kv, &pb::KV::Stub::PrepareAsyncTxn,
           etcd_workload::MutexLockTxn(prefix, my_key, lease),
           [this](const grpc::Status& s, pb::TxnResponse& r) {
             etcd_workload::LockTxnAnswer a = etcd_workload::ReadMutexLockTxn(r);
             if (!s.ok() || !a.error.empty()) {
               *failure = "lock txn: " + (s.ok() ? a.error : StatusText(s));
               return;
             }
             my_rev = a.my_rev;
             if (a.held) return Held();
             WaitDeletes();
           });
    }
    void WaitDeletes() {
      Call(loop, kv, &pb::KV::Stub::PrepareAsyncRange, etcd_workload::OlderKeyRange(prefix, my_rev),
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
             watch.Write(wait.Create(resp.kvs(0).key(), resp.header().revision(),
                                     [this] { WaitDeletes(); }));
           });
    }
    void Open() {
      watch_open = true;
      watch.on_read = [this](const pb::WatchResponse& r) {
        pb::WatchRequest cancel;
        if (std::function<void()> next = wait.OnAnswer(r, &cancel)) {
          watch.Write(std::move(cancel));
          next();
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
  Lock lock{loop, conns.kv[0].get(), conns.watch[0].get(), o.key + "/", &failure};
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
