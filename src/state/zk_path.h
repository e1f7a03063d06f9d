// ZooKeeper's path rules (PathUtils.validatePath of 3.8) and the pieces of
// a path its operations use: the parent, the last name, the suffix of a
// sequential create. Paths arrive as UTF-8 bytes; ZooKeeper checks Java
// chars (UTF-16 units), so a character outside the Basic Multilingual Plane
// (two surrogate units) is refused, and so are bytes that are not UTF-8
// (Java reads them as U+FFFD, which is in a refused range). Here in state,
// not zk: a sequential create's path is known only when it applies
// (state/store_zk.cc), so every replica checks it there. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenure::state {

// "" when `path` is valid, else why not, as ZooKeeper's message says it
// ("Path must start with / character", "relative paths not allowed @2"...;
// the number is a byte offset here). The server answers BADARGUMENTS.
std::string ZkPathError(std::string_view path);

// The parent of a valid path other than "/": "/" for "/a", "/a" for "/a/b".
std::string_view ZkParentOf(std::string_view path);

// The last name of a valid path other than "/": "b" for "/a/b".
std::string_view ZkNameOf(std::string_view path);

// The name a sequential create appends: the counter as %010d (ZooKeeper's
// format, so past 2^31 - 1 the counter is negative: "-2147483648").
std::string ZkSequenceSuffix(std::int32_t counter);

// "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config": served by the
// layer itself, never keys. ZooKeeper answers a delete of one with
// BADARGUMENTS; its other writes there depend on its ACLs, and tenure
// refuses them with BADARGUMENTS too (docs/zookeeper-compat.md).
bool IsZkSpecialPath(std::string_view path);

}  // namespace tenure::state
