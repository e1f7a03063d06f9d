// The acquire rule shared by the Store and the leader's early refusal: order
// and texts (state/acquire_rule.h).
#include "state/acquire_rule.h"

#include <gtest/gtest.h>

namespace tenure::state {
namespace {

// For keys and session ids alike.
auto Never = [](const auto&) { return false; };
auto Always = [](const auto&) { return true; };

TEST(AcquireRuleTest, LockDelayComesFirstThenTheSession) {
  auto delayed = RefuseAcquire("k", SessionId(), Always, Always);
  ASSERT_TRUE(delayed);
  EXPECT_TRUE(delayed->lock_delayed);
  EXPECT_TRUE(delayed->error.ok());  // Consul's plain false, no error

  auto missing = RefuseAcquire("k", SessionId(), Never, Always);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->lock_delayed);
  EXPECT_EQ(missing->error.message(), "missing session");

  auto invalid = RefuseAcquire("k", SessionId("abc"), Never, Always);
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->error.code(), Code::kInternal);
  EXPECT_EQ(invalid->error.message(), "invalid session \"abc\"");

  EXPECT_FALSE(RefuseAcquire("k", SessionId("abc"), Never, Never));
}

TEST(AcquireRuleTest, EveryLockDelayedTxnOpIsNamed) {
  Txn txn;
  txn.ops.resize(3);
  txn.ops[0].verb = TxnVerb::kLock;
  txn.ops[0].key = "a";
  txn.ops[1].verb = TxnVerb::kSet;
  txn.ops[1].key = "b";
  txn.ops[2].verb = TxnVerb::kLock;
  txn.ops[2].key = "c";
  TxnOutcome out;
  RefuseLockDelayedTxnOps(txn, Always, &out);
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0], (TxnError{0, "failed to lock key \"a\" due to lock delay"}));
  EXPECT_EQ(out.errors[1], (TxnError{2, "failed to lock key \"c\" due to lock delay"}));
  TxnOutcome clear;
  RefuseLockDelayedTxnOps(txn, Never, &clear);
  EXPECT_TRUE(clear.ok());
}

}  // namespace
}  // namespace tenure::state
