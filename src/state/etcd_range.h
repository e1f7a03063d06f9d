// etcd's reads over a range's entries, as etcd 3.4 answers them (its
// applierV3backend.Range and applyCompare): pure functions of the entries
// a Store (or the history window, at a past revision) found in the range,
// in key order.
#pragma once

#include <cstdint>
#include <vector>

#include "state/etcd_request.h"
#include "state/types.h"

namespace tenure::state {

// The lease holding `entry`: its numbered session's number (decision 0048),
// 0 for none or a Consul session, which has no number.
std::int64_t LeaseOf(const KvEntry& entry);
EtcdKeyValue ToEtcdKeyValue(const KvEntry& entry, bool keys_only = false);

// A Range over `in_range` (the range's entries in key order): `count` is
// every entry of the range, before the revision filters; the filters, then
// the sort (a sort target other than the key sorts ascending by default;
// ties keep key order), then the limit, which sets `more` when it cut;
// count_only answers no entries, keys_only no values. `request.range` and
// `revision` are the caller's (it found the entries).
EtcdRangeResponse EvaluateRange(const std::vector<const KvEntry*>& in_range,
                                const EtcdRangeRequest& request);

// Whether `compare` holds for every entry of its range (`in_range`); a
// missing key compares as zero revisions, version and lease, and a value
// compare on a missing key fails, as etcd's.
bool CompareHolds(const EtcdCompare& compare, const std::vector<const KvEntry*>& in_range);

}  // namespace tenure::state
