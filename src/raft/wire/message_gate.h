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
// configurations decode with unique non-zero ids and addresses; an
// InstallSnapshot's indexes and terms are consistent and its data decodes
// as a valid tenure snapshot (state::Store::DecodeSnapshot: libraft 0.15
// writes the data to disk and empties its log before it asks the state
// machine to restore, and on a failed restore it goes on with neither, then
// crashes; on restart the data dir holds a snapshot it cannot load); a
// vote's candidate is the connection's authenticated peer; and at most
// `votes_per_window` RequestVotes (`disrupt_votes_per_window` of them
// disrupt-leader) per `vote_window_ms` per peer id, all its connections
// together, are passed on (the rest dropped, as a lossy network would).
// Every message must be whole by its deadline: `message_time_ms` from its
// first byte plus its declared size at `message_bytes_per_s_min`, so a peer
// that trickles cannot hold what libraft buffered for it; and the bytes of
// messages in progress on all connections together stay within
// `inbound_bytes_max` (InboundLedger). Semantics (terms, indexes) beyond
// that are libraft's business.
//
// Bytes that pass are appended to the output in order: an AppendEntries'
// header once it is whole and checked and each entry once it is whole and
// checked (libraft allocates the declared payload at the header, but only
// what was sent is touched); an InstallSnapshot only once its data is whole
// and valid, header and data together (until then libraft has seen none of
// it). Memory held: one header, one entry, or one snapshot's data, never a
// declared total before it arrives. Pure: time is an argument. Loop thread
// (one gate per connection, one ledger per transport).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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
  DurationMs vote_window_ms = 0;
  unsigned votes_per_window = 0;
  unsigned disrupt_votes_per_window = 0;  // of votes_per_window
  // A message's deadline: this long from its first byte, plus its declared
  // size at this rate.
  DurationMs message_time_ms = 0;
  std::uint64_t message_bytes_per_s_min = 0;
  // Bytes of messages in progress, all gates of one ledger together.
  std::uint64_t inbound_bytes_max = 0;
};

// The limits tenure runs with (common/limits.h), for an election timeout.
GateLimits DefaultGateLimits(DurationMs election_timeout_ms);

// Checks a libraft configuration encoding (conf above). Pure.
Status CheckConfiguration(std::string_view conf);

// What the gates of one transport share: each member's RequestVote window
// (by peer id: a new connection gets no new votes) and the bytes of
// messages in progress on all connections.
class InboundLedger {
 public:
  explicit InboundLedger(GateLimits limits) : limits_(limits) {}

  // Whether a RequestVote from `peer` may pass at `now_ms` (counted if so).
  bool AllowVote(std::uint64_t peer, bool disrupt, MonoMs now_ms);
  // Takes `bytes` of the in-progress budget; false, taking nothing, if they
  // do not fit.
  bool Take(std::uint64_t bytes);
  void Give(std::uint64_t bytes);
  std::uint64_t in_progress_bytes() const { return in_progress_bytes_; }

 private:
  struct VoteWindow {
    MonoMs start_ms;
    unsigned votes = 0;
    unsigned disrupt = 0;
  };
  GateLimits limits_;
  std::map<std::uint64_t, VoteWindow> votes_;
  std::uint64_t in_progress_bytes_ = 0;
};

class MessageGate {
 public:
  // `ledger` is shared with the transport's other gates; null: one of its own.
  MessageGate(std::uint64_t peer_id, GateLimits limits,
              std::shared_ptr<InboundLedger> ledger = nullptr);
  ~MessageGate();
  MessageGate(const MessageGate&) = delete;
  MessageGate& operator=(const MessageGate&) = delete;

  // Consumes `input` (any split), appends what passed to *forward (bytes of
  // this call may wait to be appended with a large entry they precede, so it
  // moves by a swap: decision 0046; what *forward held on entry stays, and
  // *forward never shrinks from one call to the next). A non-OK
  // status means the stream is broken or hostile: close the connection (the
  // bytes already forwarded end on a message boundary or inside a message
  // whose remaining bytes libraft will never get, which it discards).
  Status Feed(std::string_view input, MonoMs now_ms, std::string* forward);

  // Inside a message (a stalled peer holds libraft's buffers).
  bool mid_message() const { return phase_ != Phase::kPreamble || !pending_.empty(); }
  // When the message in progress must be whole (its size as far as declared
  // yet); meaningful while mid_message(). Feed refuses input after it.
  MonoMs deadline_ms() const;
  // Bytes of the message in progress received so far (counted in the ledger).
  std::uint64_t in_progress_bytes() const { return message_bytes_; }
  std::uint64_t messages() const { return messages_; }
  std::uint64_t votes_dropped() const { return votes_dropped_; }

 private:
  enum class Phase { kPreamble, kHeader, kEntry, kSnapshot };

  Status Count(std::size_t bytes);
  Status CheckHeader(MonoMs now_ms, bool* drop);
  Status CheckAppendEntries();
  Status CheckInstallSnapshot();
  Status CheckSnapshotData(std::string_view data) const;
  Status CheckRequestVote(MonoMs now_ms, bool* drop);
  Status CheckEntry(std::string_view data);
  void FinishMessage();

  std::uint64_t peer_id_;
  GateLimits limits_;
  std::shared_ptr<InboundLedger> ledger_;
  Phase phase_ = Phase::kPreamble;
  std::string pending_;  // the part of the current unit received so far
  // A large entry's pending_ starts with the bytes that were waiting in
  // `forward` when it began (Feed); this many.
  std::size_t entry_prefix_ = 0;
  static constexpr std::size_t kSwapEntryBytes = 64 * 1024;
  std::uint64_t type_ = 0;
  std::uint64_t length_ = 0;  // header length
  // Preamble + header of the current message; for an InstallSnapshot, then
  // its data as it arrives (passed on whole once valid).
  std::string header_;
  // append-entries: how many entries, and which one comes next (their
  // headers are in header_).
  std::uint64_t entries_ = 0;
  std::uint64_t next_entry_ = 0;
  std::uint64_t snapshot_left_ = 0;
  std::uint64_t messages_ = 0;
  // The message in progress: when its first byte came, its size as declared
  // so far, and the bytes received (taken from the ledger).
  MonoMs message_start_ms_;
  std::uint64_t declared_bytes_ = 0;
  std::uint64_t message_bytes_ = 0;
  std::uint64_t votes_dropped_ = 0;
};

}  // namespace tenure::raft::wire
