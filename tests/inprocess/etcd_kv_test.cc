// etcd's KV service (etcd/kv_service.h) on a real Server over raft_fixture,
// in this process: writes proposed and answered with their entry's revision,
// reads now, after a barrier, and at past revisions from the history
// window; Consul's writes seen through etcd; compaction; etcd's errors.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "etcd/kv_service.h"
#include "inprocess/etcd_fixture.h"
#include "server/server.h"

namespace tenure::etcd {
namespace {

class EtcdKvTest : public inprocess::EtcdFixture {
 protected:
  void SetUp() override {
    StartServer();
    kv_ = std::make_unique<KvService>(*server_);
  }
  void TearDown() override {
    kv_.reset();
    StopServer();
  }

  // Calls a service method and waits for its answer.
  template <typename Response, typename Request, typename Call>
  Answer<Response> Wait(Call call, Request request) {
    return Await<Response>(
        [this, call](Request r, Done<Response> done) {
          ((*kv_).*call)(client_, std::move(r), std::move(done));
        },
        std::move(request));
  }
  Answer<PutResponse> Put(std::string key, std::string value, bool prev_kv = false) {
    state::EtcdPutRequest put;
    put.key = std::move(key);
    put.value = std::move(value);
    put.prev_kv = prev_kv;
    return Wait<PutResponse>(&KvService::Put, std::move(put));
  }
  Answer<RangeResponse> Get(state::EtcdRangeRequest request) {
    return Wait<RangeResponse>(&KvService::Range, std::move(request));
  }
  static state::EtcdRangeRequest Prefix(std::string prefix, std::int64_t revision = 0) {
    state::EtcdRangeRequest r;
    r.range = state::PrefixRangeOf(std::move(prefix));
    r.revision = revision;
    return r;
  }

  std::unique_ptr<KvService> kv_;
};

TEST_F(EtcdKvTest, AWriteAnswersWithItsEntrysRevision) {
  Answer<PutResponse> first = Put("a", "1");
  ASSERT_TRUE(first.error.ok()) << first.error.message;
  const std::int64_t revision = first.response.header.revision;
  EXPECT_EQ(revision, static_cast<std::int64_t>(server_->store().applied_index().value()));
  EXPECT_EQ(first.response.header.member_id, server_->NodeId());
  EXPECT_NE(first.response.header.cluster_id, 0u);
  Answer<PutResponse> second = Put("a", "2", true);
  ASSERT_TRUE(second.error.ok());
  EXPECT_GT(second.response.header.revision, revision);
  ASSERT_TRUE(second.response.body.has_prev_kv);
  EXPECT_EQ(second.response.body.prev_kv.value, "1");
  EXPECT_EQ(second.response.body.prev_kv.mod_revision, revision);

  Answer<RangeResponse> got = Get(Prefix("a"));
  ASSERT_TRUE(got.error.ok());
  ASSERT_EQ(got.response.body.kvs.size(), 1u);
  const state::EtcdKeyValue& kv = got.response.body.kvs[0];
  EXPECT_EQ(kv.value, "2");
  EXPECT_EQ(kv.create_revision, revision);
  EXPECT_EQ(kv.mod_revision, second.response.header.revision);
  EXPECT_EQ(kv.version, 2);
}

TEST_F(EtcdKvTest, PastRevisionsAreReadFromTheWindowAndCompactionEndsThem) {
  const std::int64_t r1 = Put("k/1", "a").response.header.revision;
  const std::int64_t r2 = Put("k/2", "b").response.header.revision;
  const std::int64_t r3 = Put("k/1", "c").response.header.revision;
  state::EtcdDeleteRangeRequest del;
  del.range = state::PrefixRangeOf("k/");
  Answer<DeleteRangeResponse> deleted =
      Wait<DeleteRangeResponse>(&KvService::DeleteRange, std::move(del));
  ASSERT_TRUE(deleted.error.ok());
  EXPECT_EQ(deleted.response.body.deleted, 2);
  EXPECT_TRUE(Get(Prefix("k/")).response.body.kvs.empty());

  Answer<RangeResponse> at_r2 = Get(Prefix("k/", r2));
  ASSERT_TRUE(at_r2.error.ok()) << at_r2.error.message;
  ASSERT_EQ(at_r2.response.body.kvs.size(), 2u);
  EXPECT_EQ(at_r2.response.body.kvs[0].value, "a");
  EXPECT_EQ(at_r2.response.body.kvs[1].value, "b");
  EXPECT_EQ(at_r2.response.header.revision,
            static_cast<std::int64_t>(server_->store().applied_index().value()))
      << "the header names the current revision";
  EXPECT_EQ(Get(Prefix("k/", r3)).response.body.kvs[0].value, "c");

  Answer<RangeResponse> future =
      Get(Prefix("k/", static_cast<std::int64_t>(server_->store().applied_index().value()) + 5));
  EXPECT_EQ(future.error, etcd_texts::FutureRevision());

  Answer<CompactionResponse> compacted =
      Wait<CompactionResponse>(&KvService::Compact, CompactionRequest{r2, false});
  ASSERT_TRUE(compacted.error.ok()) << compacted.error.message;
  EXPECT_EQ(server_->store().compact_revision(), LogIndex(static_cast<std::uint64_t>(r2)));
  EXPECT_EQ(Get(Prefix("k/", r1)).error, etcd_texts::Compacted());
  EXPECT_TRUE(Get(Prefix("k/", r2)).error.ok()) << "the compact revision itself is read";
  EXPECT_EQ(Wait<CompactionResponse>(&KvService::Compact, CompactionRequest{r1, false}).error,
            etcd_texts::Compacted());
  EXPECT_EQ(
      Wait<CompactionResponse>(&KvService::Compact, CompactionRequest{1'000'000, false}).error,
      etcd_texts::FutureRevision());
}

TEST_F(EtcdKvTest, ATxnDecidesOnTheStateBeforeItAndReadOnlyOnesAreReads) {
  // The recipes' campaign: CREATE(k) == 0 ? put : get.
  state::EtcdTxnRequest campaign;
  state::EtcdCompare absent;
  absent.target = state::EtcdCompareTarget::kCreate;
  absent.range.key = "election/leader";
  campaign.compare.push_back(absent);
  state::EtcdRequestOp put;
  put.kind = state::EtcdRequestOp::Kind::kPut;
  put.put.key = "election/leader";
  put.put.value = "me";
  state::EtcdRequestOp get;
  get.kind = state::EtcdRequestOp::Kind::kRange;
  get.range.range.key = "election/leader";
  campaign.success = {put};
  campaign.failure = {get};
  Answer<TxnResponse> won = Wait<TxnResponse>(&KvService::Txn, campaign);
  ASSERT_TRUE(won.error.ok()) << won.error.message;
  EXPECT_TRUE(won.response.body.succeeded);
  const std::uint64_t after_win = server_->store().applied_index().value();
  Answer<TxnResponse> lost = Wait<TxnResponse>(&KvService::Txn, campaign);
  ASSERT_TRUE(lost.error.ok());
  EXPECT_FALSE(lost.response.body.succeeded);
  ASSERT_EQ(lost.response.body.responses.size(), 1u);
  ASSERT_EQ(lost.response.body.responses[0].range.kvs.size(), 1u);
  EXPECT_EQ(lost.response.body.responses[0].range.kvs[0].create_revision,
            won.response.header.revision);
  EXPECT_EQ(server_->store().applied_index().value(), after_win + 1)
      << "only the barrier's entry: a read-only txn proposes nothing";

  // Refused before proposing, with etcd's texts.
  state::EtcdTxnRequest twice;
  twice.success = {put, put};
  EXPECT_EQ(Wait<TxnResponse>(&KvService::Txn, twice).error, etcd_texts::DuplicateKey());
  state::EtcdPutRequest no_key;
  EXPECT_EQ(Wait<PutResponse>(&KvService::Put, no_key).error, etcd_texts::EmptyKey());
  state::EtcdPutRequest no_lease;
  no_lease.key = "x";
  no_lease.lease = 12345;
  Answer<PutResponse> refused = Wait<PutResponse>(&KvService::Put, no_lease);
  EXPECT_EQ(refused.error, etcd_texts::LeaseNotFound());
}

TEST_F(EtcdKvTest, ConsulsWritesAreEtcdsKeys) {
  std::optional<Result<state::ApplyResult>> set;
  server_->Propose(state::KvSet{"service/config", "from-consul", 0},
                   [&set](Result<state::ApplyResult> r) { set = std::move(r); });
  ASSERT_TRUE(RunUntil([&set] { return set.has_value(); }));
  ASSERT_TRUE(set->ok());
  state::EtcdRangeRequest serializable = Prefix("service/");
  serializable.serializable = true;
  Answer<RangeResponse> got = Get(serializable);
  ASSERT_TRUE(got.error.ok());
  ASSERT_EQ(got.response.body.kvs.size(), 1u);
  EXPECT_EQ(got.response.body.kvs[0].value, "from-consul");
  EXPECT_EQ(got.response.body.kvs[0].create_revision,
            static_cast<std::int64_t>((*set)->index.value()));
}

}  // namespace
}  // namespace tenure::etcd
