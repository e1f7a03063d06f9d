// MessageGate: checks the libraft 0.15 messages a peer sends on one raft
// connection before any of their bytes reach libraft, whose decoder trusts
// lengths, counts and types it reads (an entry of type 0 or a header shorter
// than its type needs crashes it; a declared size is allocated as is).
//
// The stream it checks (libraft's uv_encoding.c; integers u64 little-endian
// unless marked):
//
//   message := type length header[length] payload
//   1 append-entries         header := term prev_index prev_term commit n
//                                       entry_header{n} unused[8]
//                            entry_header := term type:u8 0[3] size:u32
//                            length = 48 + 16n; payload = each entry's data
//   2 append-entries-result  header := term rejected last_index      (24)
//   3 request-vote           header := term candidate last_index last_term
//                                       flags (bit 0 disrupt-leader, 1 pre-vote) (40)
//   4 request-vote-result    header := term granted flags            (24)
//   5 install-snapshot       header := term last_index last_term conf_index
//                                       conf_len conf[conf_len] data_len unused[8]
//                            length = 56 + conf_len; payload = data_len bytes
//   6 timeout-now            header := term last_index last_term     (24)
//   conf := version:u8(=1) n (id address:cstring role:u8){n} padding to 8
//           (libraft leaves the padding uninitialized)
//
// What it enforces: every type and length exact for its type; counts and
// sizes within GateLimits before anything is buffered; entry types command,
// barrier or change, sizes multiples of 8; every command entry decodes as a
// tenure command (so no replica can stop applying on a stranger's bytes);
// configurations decode with unique non-zero ids and addresses; a vote's
// candidate is the connection's authenticated peer; and at most
// `votes_per_window` RequestVotes (`disrupt_votes_per_window` of them
// disrupt-leader) per
// `vote_window_ms` are passed on (the rest dropped, as a lossy network
// would). Semantics (terms, indexes) are libraft's business.
//
// Bytes that pass are appended to the output in order: a header once it is
// whole and checked, each entry once it is whole and checked, snapshot data
// as it arrives. Memory held: one header or one entry, never a declared
// total. Pure: time is an argument. Loop thread (one gate per connection).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace tenure::raft::wire {

struct GateLimits {
  std::uint64_t append_entries_max = 0;  // entries in one AppendEntries
  std::uint64_t entry_bytes_max = 0;     // one entry's data
  std::uint64_t append_bytes_max = 0;    // one AppendEntries' payload
  std::uint64_t snapshot_bytes_max = 0;  // one InstallSnapshot's data
  std::uint64_t configuration_bytes_max = 0;
  MonoMs vote_window_ms = 0;
  unsigned votes_per_window = 0;
  unsigned disrupt_votes_per_window = 0;  // of votes_per_window
};

// The limits tenure runs with (common/limits.h), for an election timeout.
GateLimits DefaultGateLimits(MonoMs election_timeout_ms);

// Checks a libraft configuration encoding (conf above). Pure.
Status CheckConfiguration(std::string_view conf);

class MessageGate {
 public:
  MessageGate(std::uint64_t peer_id, GateLimits limits);

  // Consumes `input` (any split), appends what passed to *forward. A non-OK
  // status means the stream is broken or hostile: close the connection (the
  // bytes already forwarded end on a message boundary or inside a message
  // whose remaining bytes libraft will never get, which it discards).
  Status Feed(std::string_view input, MonoMs now_ms, std::string* forward);

  // Inside a message (a stalled peer holds libraft's buffers).
  bool mid_message() const { return phase_ != Phase::kPreamble || !pending_.empty(); }
  std::uint64_t messages() const { return messages_; }
  std::uint64_t votes_dropped() const { return votes_dropped_; }

 private:
  enum class Phase { kPreamble, kHeader, kEntry, kSnapshot };

  Status CheckHeader(MonoMs now_ms, bool* drop);
  Status CheckAppendEntries();
  Status CheckInstallSnapshot();
  Status CheckRequestVote(MonoMs now_ms, bool* drop);
  Status CheckEntry(std::string_view data);
  void FinishMessage();

  std::uint64_t peer_id_;
  GateLimits limits_;
  Phase phase_ = Phase::kPreamble;
  std::string pending_;  // the part of the current unit received so far
  std::uint64_t type_ = 0;
  std::uint64_t length_ = 0;  // header length
  std::string header_;        // preamble + header of the current message
  // append-entries: how many entries, and which one comes next (their
  // headers are in header_).
  std::uint64_t entries_ = 0;
  std::uint64_t next_entry_ = 0;
  std::uint64_t snapshot_left_ = 0;
  std::uint64_t messages_ = 0;
  // Vote rate limit: the window's start and what passed in it.
  MonoMs vote_window_start_ms_ = 0;
  unsigned votes_in_window_ = 0;
  unsigned disrupt_in_window_ = 0;
  bool vote_window_open_ = false;
  std::uint64_t votes_dropped_ = 0;
};

}  // namespace tenure::raft::wire
