// Our protobuf coding of etcd's messages (etcd/proto_codec.h) against
// protoc's own code, generated from the .proto files of Debian's
// golang-etcd-server-dev as bench/vs generates it: what we write, protoc
// reads and writes back byte for byte (so our bytes are canonical); what
// protoc writes, we read to the same values. Random messages of every field,
// and the shapes clients send.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <typeinfo>

#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"
#include "etcd/messages.h"
#include "etcd/messages_services.h"
#include "etcd/proto_codec.h"

namespace tenure::etcd {
namespace {

using state::EtcdCompare;
using state::EtcdCompareTarget;
using state::EtcdRequestOp;
using state::EtcdTxnRequest;

class Random {
 public:
  explicit Random(std::uint32_t seed) : rng_(seed) {}
  std::int64_t Number() {
    switch (rng_() % 4) {
      case 0:
        return 0;
      case 1:
        return static_cast<std::int64_t>(rng_() % 300);
      case 2:
        return -static_cast<std::int64_t>(rng_() % 3) - 1;
      default:
        return static_cast<std::int64_t>((std::uint64_t{rng_()} << 32) | rng_());
    }
  }
  std::string Bytes() {
    std::string s(rng_() % 4 == 0 ? 0 : rng_() % 20, '\0');
    for (char& c : s) c = static_cast<char>(rng_() % 256);
    return s;
  }
  // protoc's strings must be UTF-8.
  std::string Ascii() {
    std::string s = Bytes();
    for (char& c : s) c = static_cast<char>('a' + static_cast<unsigned char>(c) % 26);
    return s;
  }
  bool Bool() { return rng_() % 2 == 0; }
  std::uint32_t Below(std::uint32_t n) { return rng_() % n; }

  EtcdTxnRequest Txn(int depth) {
    EtcdTxnRequest txn;
    for (std::uint32_t i = Below(4); i > 0; --i) {
      EtcdCompare c;
      c.result = static_cast<state::EtcdCompareResult>(Below(4));
      c.target = static_cast<EtcdCompareTarget>(Below(5));
      c.range.key = Bytes();
      c.range.end = Bytes();
      if (c.target == EtcdCompareTarget::kValue) {
        c.value = Bytes();
      } else {
        c.number = Number();
      }
      txn.compare.push_back(c);
    }
    for (auto* ops : {&txn.success, &txn.failure}) {
      for (std::uint32_t i = Below(4); i > 0; --i) ops->push_back(Op(depth));
    }
    return txn;
  }

  EtcdRequestOp Op(int depth) {
    EtcdRequestOp op;
    op.kind = static_cast<EtcdRequestOp::Kind>(Below(depth < 3 ? 5 : 4));
    switch (op.kind) {
      case EtcdRequestOp::Kind::kEmpty:
        break;
      case EtcdRequestOp::Kind::kRange: {
        state::EtcdRangeRequest& r = op.range;
        r.range = {Bytes(), Bytes()};
        r.limit = Number();
        r.revision = Number();
        r.sort_order = static_cast<state::EtcdSortOrder>(Below(3));
        r.sort_target = static_cast<state::EtcdSortTarget>(Below(5));
        r.serializable = Bool();
        r.keys_only = Bool();
        r.count_only = Bool();
        r.min_mod_revision = Number();
        r.max_mod_revision = Number();
        r.min_create_revision = Number();
        r.max_create_revision = Number();
        break;
      }
      case EtcdRequestOp::Kind::kPut:
        op.put = {Bytes(), Bytes(), Number(), Bool(), Bool(), Bool()};
        break;
      case EtcdRequestOp::Kind::kDeleteRange:
        op.delete_range = {{Bytes(), Bytes()}, Bool()};
        break;
      case EtcdRequestOp::Kind::kTxn:
        op.txn.push_back(Txn(depth + 1));
        break;
    }
    return op;
  }

  state::EtcdKeyValue Kv() { return {Bytes(), Number(), Number(), Number(), Bytes(), Number()}; }

  state::EtcdTxnResponse TxnAnswer(int depth) {
    state::EtcdTxnResponse out;
    out.succeeded = Bool();
    for (std::uint32_t i = Below(4); i > 0; --i) {
      state::EtcdResponseOp& op = out.responses.emplace_back();
      op.kind = static_cast<EtcdRequestOp::Kind>(1 + Below(depth < 3 ? 4 : 3));
      switch (op.kind) {
        case EtcdRequestOp::Kind::kRange:
          op.revision = Number();  // each op's own header, as etcd's applier writes it
          for (std::uint32_t k = Below(3); k > 0; --k) op.range.kvs.push_back(Kv());
          op.range.more = Bool();
          op.range.count = Number();
          break;
        case EtcdRequestOp::Kind::kPut:
          op.revision = Number();
          op.put.has_prev_kv = Bool();
          if (op.put.has_prev_kv) op.put.prev_kv = Kv();
          break;
        case EtcdRequestOp::Kind::kDeleteRange:
          op.revision = Number();
          op.delete_range.deleted = Number();
          for (std::uint32_t k = Below(3); k > 0; --k) op.delete_range.prev_kvs.push_back(Kv());
          break;
        default:
          op.txn.push_back(TxnAnswer(depth + 1));
      }
    }
    return out;
  }

 private:
  std::mt19937 rng_;
};

template <typename Ours, typename Theirs>
void ExpectSameBothWays(const Ours& ours) {
  std::string bytes;
  EncodeProto(ours, &bytes);
  Theirs theirs;
  ASSERT_TRUE(theirs.ParseFromString(bytes)) << "protoc could not read our bytes";
  EXPECT_EQ(theirs.SerializeAsString(), bytes) << theirs.DebugString();
  Ours back;
  ASSERT_EQ(DecodeProto(theirs.SerializeAsString(), &back), "");
  EXPECT_TRUE(back == ours) << typeid(Ours).name() << " " << theirs.DebugString();
}

TEST(EtcdProtoOracleTest, RandomTxnRequestsAreProtocsBytesBothWays) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    Random random(seed);
    ExpectSameBothWays<EtcdTxnRequest, etcdserverpb::TxnRequest>(random.Txn(0));
    if (HasFatalFailure()) return;
  }
}

TEST(EtcdProtoOracleTest, RandomTxnResponsesWithHeadersAreProtocsBytes) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    Random random(seed);
    TxnResponse response;
    response.header = {static_cast<std::uint64_t>(random.Number()),
                       static_cast<std::uint64_t>(random.Number()), random.Number(),
                       static_cast<std::uint64_t>(random.Number())};
    response.body = random.TxnAnswer(0);
    std::string bytes;
    EncodeProto(response, &bytes);
    etcdserverpb::TxnResponse theirs;
    ASSERT_TRUE(theirs.ParseFromString(bytes));
    EXPECT_EQ(theirs.SerializeAsString(), bytes);
    TxnResponse back;
    ASSERT_EQ(DecodeProto(bytes, &back), "");
    EXPECT_TRUE(back == response) << seed;
  }
}

TEST(EtcdProtoOracleTest, RandomServiceMessagesAreProtocsBytesBothWays) {
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    Random r(seed);
    auto header = [&] {
      return ResponseHeader{static_cast<std::uint64_t>(r.Number()),
                            static_cast<std::uint64_t>(r.Number()), r.Number(),
                            static_cast<std::uint64_t>(r.Number())};
    };
    WatchRequest watch;
    watch.kind = static_cast<WatchRequest::Kind>(r.Below(4));
    watch.create = {
        {r.Bytes(), r.Bytes()}, r.Number(), r.Bool(), {}, r.Bool(), r.Number(), r.Bool()};
    for (std::uint32_t i = r.Below(3); i > 0; --i) {
      watch.create.filters.push_back(static_cast<WatchFilter>(r.Below(2)));
    }
    watch.cancel.watch_id = r.Number();
    if (watch.kind != WatchRequest::Kind::kCreate) watch.create = {};
    if (watch.kind != WatchRequest::Kind::kCancel) watch.cancel = {};
    ExpectSameBothWays<WatchRequest, etcdserverpb::WatchRequest>(watch);

    WatchResponse events;
    events.header = header();
    events.body = {r.Number(), r.Bool(), r.Bool(), r.Number(), r.Ascii(), r.Bool(), {}};
    for (std::uint32_t i = r.Below(4); i > 0; --i) {
      Event& e = events.body.events.emplace_back();
      e.type = static_cast<EventType>(r.Below(2));
      e.kv = r.Kv();
      e.has_prev_kv = r.Bool();
      if (e.has_prev_kv) e.prev_kv = r.Kv();
    }
    ExpectSameBothWays<WatchResponse, etcdserverpb::WatchResponse>(events);

    LeaseTimeToLiveResponse ttl;
    ttl.header = header();
    ttl.body = {r.Number(), r.Number(), r.Number(), {}};
    for (std::uint32_t i = r.Below(4); i > 0; --i) ttl.body.keys.push_back(r.Bytes());
    ExpectSameBothWays<LeaseTimeToLiveResponse, etcdserverpb::LeaseTimeToLiveResponse>(ttl);
    ExpectSameBothWays<LeaseGrantResponse, etcdserverpb::LeaseGrantResponse>(
        {header(), {r.Number(), r.Number(), r.Bool() ? "etcdserver: lease not found" : ""}});
    ExpectSameBothWays<LeaseGrantRequest, etcdserverpb::LeaseGrantRequest>(
        {r.Number(), r.Number()});
    ExpectSameBothWays<LeaseKeepAliveResponse, etcdserverpb::LeaseKeepAliveResponse>(
        {header(), {r.Number(), r.Number()}});
    LeaseLeasesResponse leases{header(), {}};
    for (std::uint32_t i = r.Below(4); i > 0; --i) leases.body.leases.push_back({r.Number()});
    ExpectSameBothWays<LeaseLeasesResponse, etcdserverpb::LeaseLeasesResponse>(leases);

    StatusResponse status;
    status.header = header();
    status.body = {r.Ascii(),
                   r.Number(),
                   static_cast<std::uint64_t>(r.Number()),
                   static_cast<std::uint64_t>(r.Number()),
                   static_cast<std::uint64_t>(r.Number()),
                   static_cast<std::uint64_t>(r.Number()),
                   {},
                   r.Number(),
                   r.Bool()};
    for (std::uint32_t i = r.Below(3); i > 0; --i) status.body.errors.push_back(r.Ascii());
    ExpectSameBothWays<StatusResponse, etcdserverpb::StatusResponse>(status);

    MemberListResponse members{header(), {}};
    for (std::uint32_t i = r.Below(4); i > 0; --i) {
      members.body.members.push_back({static_cast<std::uint64_t>(r.Number()),
                                      "n" + std::to_string(i),
                                      {"http://127.0.0.1:2380"},
                                      {"http://127.0.0.1:2379", "http://127.0.0.2:2379"},
                                      r.Bool()});
    }
    ExpectSameBothWays<MemberListResponse, etcdserverpb::MemberListResponse>(members);
    ExpectSameBothWays<AuthenticateResponse, etcdserverpb::AuthenticateResponse>(
        {header(), {"token"}});
    if (HasFailure()) return;
  }
}

TEST(EtcdProtoOracleTest, WhatProtocWritesWeRead) {
  etcdserverpb::TxnRequest theirs;
  etcdserverpb::Compare* c = theirs.add_compare();
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_key("election/lease");
  c->set_create_revision(0);
  etcdserverpb::PutRequest* put = theirs.add_success()->mutable_request_put();
  put->set_key("election/lease");
  put->set_value("me");
  put->set_lease(0x694d7f4a6c2b1c05);
  etcdserverpb::RangeRequest* get = theirs.add_failure()->mutable_request_range();
  get->set_key("election/lease");
  get->set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  get->set_sort_target(etcdserverpb::RangeRequest::CREATE);
  get->set_max_create_revision(-1);
  EtcdTxnRequest ours;
  ASSERT_EQ(DecodeProto(theirs.SerializeAsString(), &ours), "");
  ASSERT_EQ(ours.compare.size(), 1u);
  EXPECT_EQ(ours.compare[0].target, EtcdCompareTarget::kCreate);
  EXPECT_EQ(ours.compare[0].number, 0);
  EXPECT_EQ(ours.compare[0].range.key, "election/lease");
  ASSERT_EQ(ours.success.size(), 1u);
  EXPECT_EQ(ours.success[0].kind, EtcdRequestOp::Kind::kPut);
  EXPECT_EQ(ours.success[0].put.lease, 0x694d7f4a6c2b1c05);
  ASSERT_EQ(ours.failure.size(), 1u);
  EXPECT_EQ(ours.failure[0].range.sort_order, state::EtcdSortOrder::kDescend);
  EXPECT_EQ(ours.failure[0].range.sort_target, state::EtcdSortTarget::kCreate);
  EXPECT_EQ(ours.failure[0].range.max_create_revision, -1);

  etcdserverpb::CompactionRequest compact;
  compact.set_revision(41);
  compact.set_physical(true);
  CompactionRequest our_compact;
  ASSERT_EQ(DecodeProto(compact.SerializeAsString(), &our_compact), "");
  EXPECT_EQ(our_compact, (CompactionRequest{41, true}));
}

}  // namespace
}  // namespace tenure::etcd
