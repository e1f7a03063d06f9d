// The client's side of the fair acquire's queue (docs/leadership.md, "The
// queue"; decision 0027): the answer of GET /v1/tenure/queue/<key>, the
// header that says a `false` kept the session's place, and the line of
// succession `tenure leader NAME` prints. No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/kv_pair.h"
#include "common/status.h"

namespace tenure::client {

// Sent with every answer that leaves the session waiting in the queue (its
// place, 1 = the head). Absent on Consul and on a server that dequeued it.
inline constexpr char kQueuePositionHeader[] = "X-Tenure-Queue-Position";

// One row of GET /v1/tenure/queue/<key>, head first.
struct QueueWaiter {
  std::string session;
  std::string session_name;
  std::string node;
  std::string since;  // RFC 3339, as the server wrote it
  std::uint64_t enqueue_index = 0;
};

// Parses the JSON array; a 404 body (a server without the queue) is the
// caller's to map to "no queue". Errors: kCorruption naming what is wrong.
Result<std::vector<QueueWaiter>> ParseQueue(std::string_view body);

// Whether `session` waits in `queue`.
bool InQueue(const std::vector<QueueWaiter>& queue, std::string_view session);

// One place in an election's line of succession.
struct Successor {
  int position = 0;       // 1 = next in line
  std::string session;    // the waiting session
  std::string candidate;  // the candidates/<name> it holds; empty when none
  std::string since;      // when it joined the queue
};

// Maps each waiter to the candidate whose registration key
// (`candidates_prefix` + name, from a recursive read of that prefix) is
// locked by the waiter's session. A session holding several registrations
// gets the first name in key order; none: an empty name. Queue order kept.
std::vector<Successor> LineOfSuccession(const std::vector<QueueWaiter>& queue,
                                        const std::vector<KvPair>& candidates,
                                        std::string_view candidates_prefix);

}  // namespace tenure::client
