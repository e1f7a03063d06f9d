#include "http/answer_size.h"

#include <algorithm>

#include "common/strings.h"
#include "http/json.h"

namespace tenure::http {
namespace {

std::size_t Base64Size(std::size_t bytes) { return (bytes + 2) / 3 * 4; }

// Values an operation writes into the transaction's answers-to-come.
bool WritesValue(state::TxnVerb verb) {
  return verb == state::TxnVerb::kSet || verb == state::TxnVerb::kCas ||
         verb == state::TxnVerb::kLock || verb == state::TxnVerb::kUnlock;
}

}  // namespace

std::size_t RecurseAnswerSize(const state::Store& store, std::string_view prefix, std::size_t max) {
  std::size_t size = 1;  // "[" and "]", less the first entry's comma
  for (const state::KvEntry* entry : store.ListKv(prefix)) {
    size += json::KvEntrySize(*entry) + 1;  // and its comma
    if (size > max) return size;
  }
  return std::max<std::size_t>(size, 2);
}

std::size_t KeysAnswerSize(const state::Store& store, std::string_view prefix,
                           std::string_view separator, std::size_t max) {
  std::size_t size = 1;       // as above
  std::string_view last_cut;  // keys sharing a cut are adjacent in key order
  bool have_cut = false;
  for (const state::KvEntry* entry : store.ListKv(prefix)) {
    std::string_view key = entry->key;
    if (!separator.empty()) {
      const std::size_t at = key.find(separator, prefix.size());
      if (at != std::string_view::npos) {
        key = key.substr(0, at + separator.size());
        if (have_cut && key == last_cut) continue;
        last_cut = key;
        have_cut = true;
      }
    }
    size += json::StringSize(key) + 1;
    if (size > max) return size;
  }
  return std::max<std::size_t>(size, 2);
}

std::size_t TxnAnswerSize(const state::Store& store, const std::vector<state::TxnOp>& ops,
                          std::size_t max) {
  constexpr std::size_t kResultWrapper = sizeof("{\"KV\":},") - 1;
  std::size_t size = sizeof("{\"Results\":[],\"Errors\":null}") - 1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const state::TxnOp& op = ops[i];
    // Earlier writes of this transaction under the op's key or prefix.
    std::size_t written = 0;
    if (op.verb == state::TxnVerb::kGet || op.verb == state::TxnVerb::kGetOrEmpty ||
        op.verb == state::TxnVerb::kGetTree) {
      for (std::size_t k = 0; k < i; ++k) {
        if (!WritesValue(ops[k].verb)) continue;
        const bool under = op.verb == state::TxnVerb::kGetTree ? StartsWith(ops[k].key, op.key)
                                                               : ops[k].key == op.key;
        if (under)
          written += kResultWrapper + json::KvEntrySize({ops[k].key}, false) +
                     Base64Size(ops[k].value.size()) + 64;
      }
    }
    size += written;
    switch (op.verb) {
      case state::TxnVerb::kGetTree:
        for (const state::KvEntry* entry : store.ListKv(op.key)) {
          size += kResultWrapper + json::KvEntrySize(*entry);
          if (size > max) return size;
        }
        break;
      case state::TxnVerb::kGet:
      case state::TxnVerb::kGetOrEmpty: {
        const state::KvEntry* entry = store.FindKv(op.key);
        state::KvEntry empty;
        if (entry == nullptr) empty.key = op.key;
        size += kResultWrapper + json::KvEntrySize(entry != nullptr ? *entry : empty);
        break;
      }
      case state::TxnVerb::kDelete:
      case state::TxnVerb::kDeleteTree:
      case state::TxnVerb::kDeleteCas:
        break;  // no result
      default: {
        // Checks and writes report the entry without its value; for a
        // write the 64 covers the indexes, session and fence it may gain.
        const state::KvEntry* entry = store.FindKv(op.key);
        state::KvEntry key_only;
        key_only.key = op.key;
        key_only.session = op.session;
        size += kResultWrapper + json::KvEntrySize(entry != nullptr ? *entry : key_only, false) +
                (state::IsWriteVerb(op.verb) ? 64 : 0);
        break;
      }
    }
    if (size > max) return size;
  }
  return size;
}

}  // namespace tenure::http
