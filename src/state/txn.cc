#include "state/txn.h"

#include <array>
#include <utility>

namespace tenure::state {
namespace {

constexpr std::array<std::pair<std::string_view, TxnVerb>, 14> kVerbs = {{
    {"set", TxnVerb::kSet},
    {"cas", TxnVerb::kCas},
    {"lock", TxnVerb::kLock},
    {"unlock", TxnVerb::kUnlock},
    {"get", TxnVerb::kGet},
    {"get-or-empty", TxnVerb::kGetOrEmpty},
    {"get-tree", TxnVerb::kGetTree},
    {"check-index", TxnVerb::kCheckIndex},
    {"check-session", TxnVerb::kCheckSession},
    {"check-not-exists", TxnVerb::kCheckNotExists},
    {"delete", TxnVerb::kDelete},
    {"delete-tree", TxnVerb::kDeleteTree},
    {"delete-cas", TxnVerb::kDeleteCas},
    {"check-fence", TxnVerb::kCheckFence},
}};

}  // namespace

std::optional<TxnVerb> ParseTxnVerb(std::string_view name) {
  for (const auto& [verb_name, verb] : kVerbs) {
    if (verb_name == name) return verb;
  }
  return std::nullopt;
}

std::string_view TxnVerbName(TxnVerb verb) {
  for (const auto& [verb_name, v] : kVerbs) {
    if (v == verb) return verb_name;
  }
  return "unknown";
}

bool IsWriteVerb(TxnVerb verb) {
  switch (verb) {
    case TxnVerb::kSet:
    case TxnVerb::kCas:
    case TxnVerb::kLock:
    case TxnVerb::kUnlock:
    case TxnVerb::kDelete:
    case TxnVerb::kDeleteTree:
    case TxnVerb::kDeleteCas:
      return true;
    default:
      return false;
  }
}

}  // namespace tenure::state
