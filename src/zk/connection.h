// One ZooKeeper client connection of the ClientPort (zk/client_port.h).
// Private to src/zk; loop thread only. Its code is in five files:
// connection.cc (its life, the queue of answers), connection_io.cc
// (reading and writing its socket),
// connection_open.cc (the session's opening, or a follower's splice),
// connection_requests.cc (the requests that wait for the Server) and
// connection_watches.cc.
//
// Its phases: kHandshake (the first 4 bytes may be a four-letter word,
// else the first frame is a ConnectRequest), kConnecting (the session is
// being opened; nothing more is read, as ZooKeeper's disableRecv), kServing
// (requests), kClosing (the last answer goes out, then the socket closes),
// kClosed. On a follower a ConnectRequest moves it to kSpliced instead: its
// bytes go to the leader's port and back unread (zk/leader_splice.h).
//
// Requests are answered in the order they came (clients treat a reply out
// of order as fatal), through a queue of slots. A read runs once every
// request before it has its answer; a write (and sync) starts once every
// read before it ran, so a read never sees a later write of its own
// connection, nor misses an earlier one. Each request renews the session;
// a ping is answered once its renewal is acknowledged.
// Reads wait for readiness and go to the port's shared buffer, so an idle
// connection holds no read buffer; reading stops while its unsent answers
// pass kUnsentBytesMax (a client that never reads holds that much).
#pragma once

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "server/acl_resolver.h"
#include "zk/framing.h"
#include "zk/records.h"
#include "zk/request.h"
#include "zk/watch_table.h"

namespace tenure::tls {
class Context;
class Session;
}  // namespace tenure::tls

namespace tenure::zk {

class ClientPort;
class LeaderSplice;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `fd`: the accepted socket, owned from here on; `tls`: it came to the
  // TLS listener (null for clear text).
  Connection(ClientPort& port, int fd, std::uint64_t number,
             std::shared_ptr<const tls::Context> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start();
  // Closes the socket now; answers not yet written are dropped. Idempotent.
  void Close();
  // The port's ready set says the socket may read or write now, and
  // whether the client's end of the stream (or an error) is already there.
  void OnReady(bool readable, bool writable, bool peer_ended);
  std::int64_t session() const { return session_; }
  // What the port's liveness check (ClientPort::CheckLiveness) reads: a
  // connection still opening its session, since when, and one that has
  // opened it (serving, or closing after its last answer).
  bool opening() const { return phase_ == Phase::kHandshake || phase_ == Phase::kConnecting; }
  MonoMs opened_ms() const { return opened_ms_; }
  bool opened() const { return phase_ == Phase::kServing || phase_ == Phase::kClosing; }
  // Spliced to the leader with this raft id (0: never spliced); whether
  // the link is still open, the leader has sent a byte, and when the link
  // ended (the port's liveness check bounds each wait).
  std::uint64_t spliced_to() const {
    return spliced_ == nullptr || phase_ == Phase::kClosed ? 0 : spliced_->leader;
  }
  bool splice_open() const { return phase_ == Phase::kSpliced; }
  bool leader_answered() const { return spliced_ != nullptr && spliced_->leader_answered; }
  MonoMs splice_ended_ms() const { return spliced_ != nullptr ? spliced_->ended_ms : MonoMs(); }
  std::uint64_t number() const { return number_; }  // its owner number in the watch table
  // Requests read, not yet answered.
  std::size_t unanswered() const { return slots_.size(); }
  // A watch event, after every answer written so far; with `check_rights`
  // (it fired through a persistent watch) only if the connection may read
  // the path.
  void SendEvent(EventType type, const std::string& path, bool check_rights = false);

  // Unsent answer bytes past which reading stops.
  static constexpr std::size_t kUnsentBytesMax = 4 * 1024 * 1024;
  // Watches one connection may hold; the next read that would set one
  // closes the connection instead (its client reconnects, its watches
  // gone, as after any lost connection).
  static constexpr std::size_t kWatchesMax = 100'000;
  // Requests read and not answered, past which reading stops (ZooKeeper's
  // globalOutstandingLimit is 1,000 too).
  static constexpr std::size_t kSlotsMax = 1000;

 private:
  enum class Phase : std::uint8_t {
    kHandshake,
    kConnecting,
    kServing,
    kSpliced,
    kClosing,
    kClosed
  };
  struct Slot {
    std::uint64_t id = 0;
    DecodedRequest request;
    enum class State : std::uint8_t { kWaiting, kStarted, kDone } state = State::kWaiting;
    std::vector<std::string> events;  // notifications that go before the answer
    std::string answer;               // the reply frame without its length
    bool ends_connection = false;
    MonoMs read_ms;
  };

  void ArmRead();
  void OnReadable();
  void OnBytes(const char* data, std::size_t size);
  void OnConnectFrame(const std::string& frame);
  void OnConnected(Result<ConnectResponse> answer);
  void Splice(const std::string& connect_frame);
  void OnRequestFrame(const std::string& frame);
  void Pump();
  void PumpOnce();
  void ClearSlots();  // every request dropped, unanswered
  // The client's address, asked of the socket (for logs and whoAmI: not
  // kept, an idle connection holds as little as it can).
  std::string peer() const;
  void Begin(Slot& slot);  // the slot is kDone after it if answered at once
  void StartWrite(std::uint64_t id);
  void StartSync(std::uint64_t id);
  void StartClose(std::uint64_t id);
  void Authenticate(Slot& slot);
  void SetWatches(Slot& slot);
  void WatchCheck(Slot& slot, bool remove);
  void AddWatch(Slot& slot);
  bool MaybeWatch(const DecodedRequest& request, const std::string& answer);
  bool SetOwnWatch(WatchTable::Kind kind, std::string_view path);
  void Answer(Slot& slot, std::string answer, bool ends_connection = false);
  void Finish(std::uint64_t id, std::string answer, bool ends_connection = false);
  Slot* Find(std::uint64_t id);
  void StartPing(std::uint64_t id);
  void CloseLater();
  void SendFrame(std::string_view frame);
  void SendText(std::string_view text);
  void Flush();
  void SendSome();  // the rest of the outbox's `sending`, until done or the socket is full
  void Written(boost::system::error_code ec);
  // Reads into the port's buffer, as read_some: TLS's plaintext where the
  // connection has TLS (its failures end in `ec`, logged).
  std::size_t ReadSome(boost::system::error_code& ec);
  void Resume();
  bool Backlogged() const;
  bool ClientEnded() const { return spliced_ != nullptr && spliced_->client_ended; }
  bool Reading() const {
    return phase_ == Phase::kHandshake || phase_ == Phase::kServing || phase_ == Phase::kSpliced;
  }

  ClientPort& port_;
  const std::uint64_t number_;
  int fd_ = -1;  // the socket; -1 once closed
  std::unique_ptr<tls::Session> tls_;
  // Readiness, edge-triggered (zk/ready_set.h): set when the port's set
  // says so, cleared when a read or write answers EAGAIN.
  bool in_ready_ = true;
  bool out_ready_ = true;
  // A write waits for readiness: to write, or (TLS) to read first.
  bool write_waiting_ = false;
  bool write_wants_read_ = false;
  // TLS's last read stopped for want of writability (its handshake's
  // answer), not readability: the read waits on that (a write's want is
  // its own).
  bool read_wants_write_ = false;
  // The last read wanted more bytes: what OpenSSL holds (SSL_has_pending
  // counts a partial record) waits for readiness, not a posted read.
  bool read_starved_ = false;
  // A readiness report said the client's end of the stream (or an error)
  // had come: reads go on to EOF or EAGAIN, as a short read cannot be
  // trusted to have drained the socket (the end's edge is spent).
  bool peer_ended_ = false;
  // It came marked by a follower's splice (kRelayMark): served here or
  // closed, never spliced again.
  bool came_spliced_ = false;
  bool reading_ = false;     // a read waits for readiness
  bool writing_ = false;     // a write is under way
  bool caller_set_ = false;  // an auth packet named caller_'s token
  MonoMs opened_ms_;         // accepted (no timer of its own: the port checks)
  Phase phase_ = Phase::kHandshake;
  // The first bytes, until 4 tell a word from a length.
  char head_[4] = {};
  std::uint8_t head_size_ = 0;
  bool head_checked_ = false;
  // A follower's splice of this connection to the leader: made only then,
  // so a connection served here holds one pointer for it.
  struct Spliced {
    std::shared_ptr<LeaderSplice> link;
    std::uint64_t leader = 0;  // its raft id
    bool leader_answered = false;
    bool client_ended = false;  // the client closed its side
    MonoMs ended_ms;            // when the link ended
  };
  std::unique_ptr<Spliced> spliced_;
  FrameSplitter frames_;
  // What goes out: made with the first answer, let go once all went out,
  // so an idle connection holds one null pointer for it.
  struct Outbox {
    std::string sending;   // the bytes of the write under way
    std::size_t sent = 0;  // of them, those that went out
    std::string unsent;    // what waits for the next
  };
  std::unique_ptr<Outbox> out_;
  std::string& unsent() {
    if (out_ == nullptr) out_ = std::make_unique<Outbox>();
    return out_->unsent;
  }
  std::size_t OutboxBytes() const {
    return out_ == nullptr ? 0 : out_->sending.size() - out_->sent + out_->unsent.size();
  }
  bool dropping_ = false;
  bool pumping_ = false;     // Pump is running: a nested call asks for another pass
  bool pump_again_ = false;  // an answer passed kFrameBytesMax: the connection ends
  // Slots are begun in order: the first slots_begun_ have been (kStarted
  // or kDone), the rest wait; slots_started_ of them are kStarted. So a
  // pass of PumpOnce starts where it stopped instead of walking every
  // pipelined request again (at most kSlotsMax, 1,000: 16 bits; they fill
  // padding beside the flags).
  std::uint16_t slots_begun_ = 0;
  std::uint16_t slots_started_ = 0;
  // The requests read and not yet answered, oldest first: a deque made
  // while there are some, so an idle connection holds none (an empty
  // std::deque holds its map and a first block, ~600 bytes).
  class SlotQueue {
   public:
    bool empty() const { return queue_ == nullptr || queue_->empty(); }
    std::size_t size() const { return queue_ == nullptr ? 0 : queue_->size(); }
    Slot& front() { return queue_->front(); }
    Slot& operator[](std::size_t at) { return (*queue_)[at]; }
    void push_back(Slot slot) {
      if (queue_ == nullptr) queue_ = std::make_unique<std::deque<Slot>>();
      queue_->push_back(std::move(slot));
    }
    // The last one out frees the deque.
    void pop_front() {
      queue_->pop_front();
      if (queue_->empty()) queue_.reset();
    }
    // Keeps the deque: a caller further up may hold a slot (Close from
    // inside PumpOnce's loop, which stops at the next slot).
    void clear() {
      if (queue_ != nullptr) queue_->clear();
    }

   private:
    std::unique_ptr<std::deque<Slot>> queue_;
  };
  SlotQueue slots_;
  std::size_t answered_bytes_ = 0;  // answers in slots_, not yet in the outbox
  std::uint64_t next_slot_ = 1;
  std::int64_t session_ = 0;
  // Tenure's rights: the anonymous token's until an auth packet names one.
  server::Caller caller_;
  std::vector<ClientInfo> authenticated_;  // whoAmI's, after the "ip" one
};

}  // namespace tenure::zk
