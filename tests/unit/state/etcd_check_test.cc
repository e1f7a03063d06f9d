// The checks before an etcd KV request is proposed (state/etcd_check.h):
// etcd 3.4's texts for empty keys, ignore_value and ignore_lease misuse,
// too many ops (its per-level count), duplicate keys (its checkIntervals
// rules, nested branches included), empty ops; tenure's key size, value
// size, nesting and past-revision-in-a-txn refusals.
#include "state/etcd_check.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/limits.h"
#include "unit/state/etcd_ops.h"

namespace tenure::state {
namespace {

using etcd_texts::GrpcCode;

using testutil::Delete;
using testutil::Get;
using testutil::Nested;
using testutil::Put;

EtcdTxnRequest EtcdTxnOf(std::vector<EtcdRequestOp> success,
                         std::vector<EtcdRequestOp> failure = {}) {
  EtcdTxnRequest txn;
  txn.success = std::move(success);
  txn.failure = std::move(failure);
  return txn;
}
std::string Text(const etcd_texts::EtcdError& e) { return e.message; }

TEST(EtcdCheckTest, PutsNeedAKeyAndNoValueOrLeaseTheyIgnore) {
  EXPECT_TRUE(CheckEtcdPut(Put("k").put).ok());
  EXPECT_EQ(Text(CheckEtcdPut(Put("").put)), "etcdserver: key is not provided");
  EtcdPutRequest put = Put("k").put;
  put.ignore_value = true;
  EXPECT_EQ(Text(CheckEtcdPut(put)), "etcdserver: value is provided");
  put.value.clear();
  EXPECT_TRUE(CheckEtcdPut(put).ok());
  put.ignore_lease = true;
  put.lease = 5;
  EXPECT_EQ(Text(CheckEtcdPut(put)), "etcdserver: lease is provided");
  EXPECT_EQ(CheckEtcdPut(put).code, GrpcCode::kInvalidArgument);
}

TEST(EtcdCheckTest, KeyAndValueSizesHaveLimits) {
  const std::string longest(limits::kKvKeyBytesMax, 'k');
  EXPECT_TRUE(CheckEtcdPut(Put(longest).put).ok());
  EXPECT_EQ(Text(CheckEtcdPut(Put(longest + "k").put)),
            "tenure: key is 4097 bytes, longer than the 4096 allowed");
  EXPECT_EQ(Text(CheckEtcdDeleteRange(Delete(longest + "k").delete_range)),
            "tenure: key is 4097 bytes, longer than the 4096 allowed");
  EXPECT_TRUE(CheckEtcdPut(Put("k", std::string(limits::kKvValueBytesMax, 'v')).put).ok());
  EXPECT_EQ(Text(CheckEtcdPut(Put("k", std::string(limits::kKvValueBytesMax + 1, 'v')).put)),
            "etcdserver: request is too large");
  EXPECT_EQ(Text(CheckEtcdRange(Get("").range)), "etcdserver: key is not provided");
}

TEST(EtcdCheckTest, OpsAreCountedPerLevelAndANestedTxnGetsWhatIsLeft) {
  std::vector<EtcdRequestOp> ops;
  for (int i = 0; i < 128; ++i) ops.push_back(Put("k" + std::to_string(i)));
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf(ops, ops)).ok()) << "128 in each branch";
  ops.push_back(Put("k128"));
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf(ops))), "etcdserver: too many operations in txn request");
  EtcdTxnRequest compares;
  compares.compare.resize(129);
  for (EtcdCompare& c : compares.compare) c.range.key = "k";
  EXPECT_EQ(Text(CheckEtcdTxn(compares)), "etcdserver: too many operations in txn request");
  // 100 at the top leave 28 for a nested txn.
  std::vector<EtcdRequestOp> top(100, Get("r"));
  std::vector<EtcdRequestOp> inner(28, Get("r"));
  top.push_back(Nested(EtcdTxnOf(inner)));
  EXPECT_FALSE(CheckEtcdTxn(EtcdTxnOf(top)).ok()) << "101 ops at the top leave 27";
  top.pop_back();
  top.pop_back();
  top.push_back(Nested(EtcdTxnOf(inner)));
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf(top)).ok());
}

TEST(EtcdCheckTest, CompareAndOpsAtAllLevelsHaveABound) {
  // Four nested txns of 124 gets a branch: 4 + 4 x 248 = 996 items.
  std::vector<EtcdRequestOp> gets(124, Get("r"));
  std::vector<EtcdRequestOp> nested(2, Nested(EtcdTxnOf(gets, gets)));
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf(nested, nested)).ok());
  // Eight: 8 + 8 x 248 = 1,992, each level within etcd's count.
  nested.resize(4, Nested(EtcdTxnOf(gets, gets)));
  const etcd_texts::EtcdError refused = CheckEtcdTxn(EtcdTxnOf(nested, nested));
  EXPECT_EQ(Text(refused),
            "tenure: txn has 1992 compares and operations at all its levels, more than the 1024 "
            "allowed");
  EXPECT_EQ(refused.code, GrpcCode::kInvalidArgument);
}

TEST(EtcdCheckTest, AKeyPutTwiceOrPutAndDeletedInOneBranchIsADuplicate) {
  const std::string duplicate = "etcdserver: duplicate key given in txn request";
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({Put("a"), Put("a")}))), duplicate);
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({Put("a"), Delete("a")}))), duplicate);
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({Delete("a", "c"), Put("b")}))), duplicate);
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Delete("a", "c"), Put("c")})).ok()) << "the end is outside";
  // etcd 3.4 checks a delete as the interval [key, range_end) without
  // reading "\0" as "to the end": a from-key delete holds no key there.
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Delete("a", std::string(1, '\0')), Put("b")})).ok());
  EXPECT_TRUE(
      CheckEtcdTxn(EtcdTxnOf({Put("b"), Nested(EtcdTxnOf({Delete("a", std::string(1, '\0'))}))}))
          .ok());
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Put("a")}, {Put("a")})).ok()) << "one branch runs";
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Delete("a"), Delete("a")})).ok()) << "deletes may repeat";
  // Nested: a key in both branches of one nested txn counts once...
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Nested(EtcdTxnOf({Put("x")}, {Put("x")}))})).ok());
  // ...but not beside the same key at the level above.
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({Put("x"), Nested(EtcdTxnOf({Put("x")}))}))), duplicate);
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({Delete("w", "y"), Nested(EtcdTxnOf({}, {Put("x")}))}))),
            duplicate);
  EXPECT_EQ(
      Text(CheckEtcdTxn(EtcdTxnOf({Nested(EtcdTxnOf({Put("x")})), Nested(EtcdTxnOf({Put("x")}))}))),
      duplicate);
}

TEST(EtcdCheckTest, EmptyOpsDeepNestingAndPastRevisionsAreRefused) {
  EXPECT_EQ(Text(CheckEtcdTxn(EtcdTxnOf({EtcdRequestOp{}}))), "etcdserver: key not found");
  EtcdTxnRequest txn = EtcdTxnOf({Get("k")});
  for (int depth = 1; depth < kEtcdTxnDepthMax; ++depth) txn = EtcdTxnOf({Nested(std::move(txn))});
  EXPECT_TRUE(CheckEtcdTxn(txn).ok()) << "32 levels";
  txn = EtcdTxnOf({Nested(std::move(txn))});
  EXPECT_EQ(Text(CheckEtcdTxn(txn)), "tenure: txn nested deeper than 32");
  EtcdRequestOp past = Get("k");
  past.range.revision = 4;
  EXPECT_EQ(CheckEtcdTxn(EtcdTxnOf({past})).code, GrpcCode::kInvalidArgument);
  EXPECT_EQ(CheckEtcdTxn(EtcdTxnOf({Nested(EtcdTxnOf({past}))})).code, GrpcCode::kInvalidArgument);
  // A read-only txn answered from a server's window may read the past (the
  // STM's snapshot reads).
  EXPECT_TRUE(CheckEtcdTxn(EtcdTxnOf({Nested(EtcdTxnOf({past}))}), true).ok());
  EtcdTxnRequest empty_compare;
  empty_compare.compare.resize(1);
  EXPECT_EQ(Text(CheckEtcdTxn(empty_compare)), "etcdserver: key is not provided");
}

TEST(EtcdCheckTest, ATxnWritesWhenAnyBranchPutsOrDeletesAtAnyDepth) {
  EXPECT_FALSE(EtcdTxnWrites(EtcdTxnOf({Get("a")}, {Get("b")})));
  EXPECT_TRUE(EtcdTxnWrites(EtcdTxnOf({Get("a")}, {Delete("b")})));
  EXPECT_TRUE(EtcdTxnWrites(EtcdTxnOf({Nested(EtcdTxnOf({}, {Put("x")}))})));
  EXPECT_FALSE(EtcdTxnWrites(EtcdTxnOf({Nested(EtcdTxnOf({Get("x")}))})));
}

}  // namespace
}  // namespace tenure::state
