#include "state/recipe_succession.h"

#include <algorithm>

namespace tenure::state {

std::vector<RecipeTenure> RecipeSuccession(const LockHistory& history, std::string_view prefix) {
  struct Contender {
    const std::string* key;
    const LockGrant* grant;
  };
  std::vector<Contender> contenders;
  history.ForEachUnder(prefix, [&](const std::string& key, const LockHistory::KeyHistory& h) {
    for (const LockGrant& grant : h.grants) contenders.push_back({&key, &grant});
  });
  // In create-revision order: the order in which they line up.
  std::sort(contenders.begin(), contenders.end(),
            [](const Contender& a, const Contender& b) { return a.grant->fence < b.grant->fence; });
  std::vector<RecipeTenure> tenures;
  // The latest end among the lower keys seen so far; none while one is held.
  bool lower_held = false;
  LogIndex lower_end;
  UnixMs lower_end_at;
  for (const Contender& c : contenders) {
    const LockGrant& g = *c.grant;
    if (!lower_held) {
      const bool waited = lower_end > g.grant_index;
      const LogIndex from = waited ? lower_end : g.grant_index;
      if (g.held() || from < g.end_index) {
        tenures.push_back({*c.key, g, from, waited ? lower_end_at : g.granted_at});
      }
    }
    if (g.held()) {
      lower_held = true;
    } else if (g.end_index > lower_end) {
      lower_end = g.end_index;
      lower_end_at = g.ended_at;
    }
  }
  return tenures;
}

}  // namespace tenure::state
