// ZkConn: a minimal ZooKeeper client session over one TCP connection, on the
// benchmark's one asio thread, speaking ZooKeeper's binary (jute) protocol:
// ConnectRequest, then length-prefixed requests (RequestHeader xid + type)
// answered in order (ReplyHeader xid, zxid, err), and watch events (xid -1).
//
// Why not libzookeeper-mt: its C client runs two threads per session (I/O
// and completions), so 10,000 watcher sessions would be 20,000 threads on two
// cores. The measured server work is the same; only the client is lighter,
// like tenure's and etcd's clients in this benchmark (one thread for all).
//
// Only what the benchmark needs: create (any mode), delete, exists,
// setData, getData and getChildren (with a watch), ping, closeSession.
// Paths and data are opaque bytes; results are error codes (0 = ok).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange
#include <vector>

namespace tenure::vs {

namespace asio = boost::asio;

class ZkConn {
 public:
  // err: ZooKeeper's error code (0 ok, -110 node exists, ...), or -1000 for a
  // transport failure. body: the response after the ReplyHeader.
  using Callback = std::function<void(int err, std::string_view body)>;
  // A watch event: type (1 created, 2 deleted, 3 data changed...), path.
  using WatchCallback = std::function<void(int type, std::string_view path)>;

  ZkConn(asio::io_context& ioc, asio::ip::tcp::endpoint endpoint);
  ZkConn(const ZkConn&) = delete;
  ZkConn& operator=(const ZkConn&) = delete;

  // Blocking TCP connect, then sends the ConnectRequest; `done` runs when the
  // server has created the session (a replicated, fsynced write in ZooKeeper).
  bool Connect(int session_timeout_ms, std::string* error, std::function<void(bool ok)> done);
  bool connected() const { return session_id_ != 0; }
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  std::int64_t session_id() const { return session_id_; }
  std::size_t pending() const { return pending_.size(); }
  std::chrono::steady_clock::time_point last_send() const { return last_send_; }

  void Create(std::string_view path, std::string_view data, bool ephemeral, Callback done);
  // flags: ZooKeeper's CreateMode (1 ephemeral, 2 sequential, 3 both); the
  // answer's body is the created path (a string: ParseString).
  void CreateMode(std::string_view path, std::string_view data, int flags, Callback done);
  void Delete(std::string_view path, int version, Callback done);
  void Exists(std::string_view path, bool watch, Callback done);
  void SetData(std::string_view path, std::string_view data, Callback done);
  void GetData(std::string_view path, bool watch, Callback done);
  // The answer's body is the children's names (ParseStrings).
  void GetChildren(std::string_view path, bool watch, Callback done);
  void Ping();  // keeps an idle session alive; the reply is ignored
  // closeSession: the session ends on the server, which answers, then
  // closes the connection (done runs with the answer).
  void CloseSession(Callback done);
  void OnWatch(WatchCallback cb) { on_watch_ = std::move(cb); }
  void Close();

  // A jute string at the start of `body` ("" if it does not parse), and a
  // vector of them.
  static std::string ParseString(std::string_view body);
  static std::vector<std::string> ParseStrings(std::string_view body);

 private:
  void Send(int type, const std::string& body, Callback done);
  void Write(std::string frame);
  void StartWrite();
  void ReadMore();
  void Parse();
  void Fail(std::string why);

  asio::io_context& ioc_;
  asio::ip::tcp::endpoint endpoint_;
  asio::ip::tcp::socket socket_;
  std::function<void(bool)> on_connected_;
  WatchCallback on_watch_;
  std::deque<std::pair<std::int32_t, Callback>> pending_;  // xid, callback, in send order
  std::deque<std::string> out_;                            // frames not yet written
  bool writing_ = false;
  std::string in_;
  std::int32_t next_xid_ = 1;
  std::int64_t session_id_ = 0;
  bool failed_ = false;
  std::string error_;
  std::chrono::steady_clock::time_point last_send_ = std::chrono::steady_clock::now();
};

}  // namespace tenure::vs
