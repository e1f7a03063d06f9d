#include "http/prefix_copy.h"

#include <utility>
#include <vector>

namespace tenure::http {

PrefixCopy::PrefixCopy(std::string prefix, Take take, Drop drop)
    : prefix_(std::move(prefix)), take_(std::move(take)), drop_(std::move(drop)) {}

bool PrefixCopy::Step(const state::Store& store) {
  if (!in_pass_) {
    in_pass_ = true;
    ++passes_;
    index_ = store.PrefixIndex(prefix_);
    replaced_at_ = store.replaced_at();
    after_.clear();
  }
  const bool whole = passes_ > kSlicedPassesMax;
  std::size_t bytes = 0;
  for (;;) {
    const std::vector<const state::KvEntry*> page =
        store.ListKvAfter(prefix_, after_, kSliceEntries);
    for (const state::KvEntry* entry : page) {
      bytes += take_(*entry);
      if (!whole && bytes >= kSliceBytes) {
        after_ = entry->key;
        return false;
      }
    }
    if (!page.empty()) after_ = page.back()->key;
    if (page.size() < kSliceEntries) break;  // the end of the prefix
    if (!whole) return false;
  }
  in_pass_ = false;
  // An unchanged index means nothing under the prefix was written, deleted
  // or reaped since the pass began (Store::PrefixIndex's rules), unless the
  // whole state was replaced meanwhile.
  if (store.PrefixIndex(prefix_) == index_ && store.replaced_at() == replaced_at_) return true;
  drop_();
  return false;
}

}  // namespace tenure::http
