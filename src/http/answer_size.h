// The size of an answer's JSON body, counted from the Store before the answer
// is built (the answer-size limit, docs/limits.md): a GET ?recurse or ?keys,
// and the results of a /v1/txn summed over its operations. Counting stops as
// soon as the total passes `max`, so a refused request costs a walk over
// entries, never a copy of their values. Pure; loop thread only.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "state/store.h"
#include "state/txn.h"

namespace tenure::http {

// Bytes of GET /v1/kv/<prefix>?recurse's JSON body; a value > max means
// "more than max" (counting stopped there).
std::size_t RecurseAnswerSize(const state::Store& store, std::string_view prefix, std::size_t max);
// Bytes of GET /v1/kv/<prefix>?keys[&separator=]'s JSON body, likewise.
std::size_t KeysAnswerSize(const state::Store& store, std::string_view prefix,
                           std::string_view separator, std::size_t max);
// Bytes of /v1/txn's JSON body if every operation succeeds, likewise. For a
// transaction with writes it also counts, for each read, the values that
// earlier operations of the same transaction write under its key or prefix,
// so the count bounds the answer its apply will build (concurrent writes
// landing between this count and the apply aside).
std::size_t TxnAnswerSize(const state::Store& store, const std::vector<state::TxnOp>& ops,
                          std::size_t max);

}  // namespace tenure::http
