// A range of keys as etcd names one (decision 0048, section 2): a key and a
// range end. An empty end is the key alone; an end of one zero byte is every
// key at or after `key` (so key and end both "\0" is every key); any other
// end is [key, end), empty when end <= key. Keys compare as unsigned bytes,
// as std::string does. Pure value type.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace tenure::state {

struct KeyRange {
  std::string key;
  std::string end;

  bool single() const { return end.empty(); }
  bool unbounded() const { return end.size() == 1 && end[0] == '\0'; }
  bool Contains(std::string_view k) const {
    if (single()) return k == key;
    if (k < std::string_view(key)) return false;
    return unbounded() || k < std::string_view(end);
  }
  // True when no key can be inside (end at or before key).
  bool empty() const { return !single() && !unbounded() && end <= key; }

  bool operator==(const KeyRange&) const = default;
};

// The range of every key starting with `prefix` (etcd's WithPrefix and
// GetPrefixRangeEnd): the prefix with its last byte below 0xff one higher,
// trailing 0xff bytes dropped; open at the end ("\0") when every byte is
// 0xff or the prefix is empty.
inline KeyRange PrefixRangeOf(std::string prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return {std::move(prefix), std::string(1, '\0')};
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return {std::move(prefix), std::move(end)};
}

}  // namespace tenure::state
