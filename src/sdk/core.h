// sdk::Core: what a tenure::Client shares with its Sessions and Elections:
// the io_context and the thread that runs it, the one net::HttpClient, and
// the library objects (client::Session, client::Election) behind every
// public handle. The public classes are thin: each call runs its work on the
// loop thread (Run, or Post for the non-blocking forms) against the object
// its handle names, so client/ keeps its loop-thread-only contract and
// nothing in it takes a lock.
//
// A handle outlives its object safely: Find* answers nullptr once the object
// was destroyed (its public owner gone, its session gone, or the Core
// closed), and every call turns that into a Status. Every callback the
// application gives is Guarded: it never runs once its public object is
// gone, even when that object was destroyed in a callback, where the
// library object itself can only go a moment later (Retire, then Remove).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/election.h"
#include "client/session.h"
#include "common/status.h"
#include "net/http_client.h"
#include "tenure/options.h"

namespace tenure::sdk {

class Core {
 public:
  explicit Core(const ClientOptions& options);
  ~Core();  // Close()
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Destroys every object on the loop thread, shuts the HTTP client down and
  // joins the thread. Idempotent. REQUIRES: not on the loop thread.
  void Close();

  bool OnLoopThread() const { return std::this_thread::get_id() == loop_id_; }
  const std::vector<std::string>& addresses() const { return http_options_.addresses; }

  // Queues `fn` on the loop thread; false (and `fn` dropped) once closed.
  bool Post(std::function<void()> fn);
  // Runs `fn` on the loop thread and waits for it: at once when called
  // there. kUnavailable once closed.
  Status Run(const std::function<void()>& fn);
  // Waits for an answer the loop thread gives through a promise; a promise
  // dropped unanswered (its object destroyed, the Core closed) is kUnavailable.
  template <typename T>
  static Result<T> Wait(std::future<Result<T>>& answer);
  static Status Wait(std::future<Status>& answer);

  // ---- loop thread only -------------------------------------------------
  std::uint64_t AddSession();
  std::uint64_t AddElection(std::uint64_t session, const ElectionOptions& options);
  // From now on the object's callbacks (and its elections', for a session)
  // do not run. Unknown: nothing.
  void Retire(std::uint64_t handle);
  // Destroys the object (a session with its elections). Unknown: nothing.
  void Remove(std::uint64_t handle);
  // `callback`, run only while the object of `handle` is not retired.
  template <typename... Args>
  std::function<void(Args...)> Guard(std::uint64_t handle, std::function<void(Args...)> callback);
  client::Session* FindSession(std::uint64_t handle);
  client::Election* FindElection(std::uint64_t handle);
  // The session of an election (nullptr once gone).
  client::Session* SessionOf(std::uint64_t election);

  // ---- any thread ---------------------------------------------------------
  // What `read` makes of the live object behind `handle`, read on the loop
  // thread; `fallback` once the object or the Core is gone.
  template <typename T, typename Read>
  T ReadSession(std::uint64_t handle, T fallback, Read read);
  template <typename T, typename Read>
  T ReadElection(std::uint64_t handle, T fallback, Read read);
  // Session::Create was called (it may be called once).
  bool TakeCreate(std::uint64_t session);

 private:
  struct SessionEntry {
    std::unique_ptr<client::Session> session;
    bool create_called = false;
    std::shared_ptr<bool> live = std::make_shared<bool>(true);
  };
  struct ElectionEntry {
    std::uint64_t session = 0;
    std::unique_ptr<client::Election> election;
    std::shared_ptr<bool> live = std::make_shared<bool>(true);
  };

  // The liveness flag of a handle's object (a retired one for an unknown handle).
  std::shared_ptr<bool> Live(std::uint64_t handle);

  void Teardown();

  net::HttpClientOptions http_options_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::unique_ptr<net::HttpClient> http_;
  std::thread thread_;
  std::thread::id loop_id_;

  std::mutex mu_;  // guards closed_ and the posting of work
  bool closed_ = false;

  // Loop thread only.
  std::uint64_t next_handle_ = 1;
  std::map<std::uint64_t, SessionEntry> sessions_;
  std::map<std::uint64_t, ElectionEntry> elections_;
};

// The message of calls made after the Client was destroyed.
inline constexpr char kClosed[] = "tenure: the client was destroyed";
// A call whose object was destroyed before it answered.
inline constexpr char kDropped[] =
    "tenure: no answer: the client, session or election was destroyed first";

// A blocking call made on the client's thread (from a callback).
Status BlockingOnLoop(const char* what);

// The blocking form of a call: starts the non-blocking form with a `done`
// that answers a promise, and waits (kFailedPrecondition on the loop thread).
template <typename T, typename Start>
Result<T> Await(Core* core, const char* what, Start start) {
  if (core->OnLoopThread()) return BlockingOnLoop(what);
  auto answer = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> future = answer->get_future();
  start([answer](Result<T> result) { answer->set_value(std::move(result)); });
  return Core::Wait(future);
}
template <typename Start>
Status AwaitStatus(Core* core, const char* what, Start start) {
  if (core->OnLoopThread()) return BlockingOnLoop(what);
  auto answer = std::make_shared<std::promise<Status>>();
  std::future<Status> future = answer->get_future();
  start([answer](Status status) { answer->set_value(std::move(status)); });
  return Core::Wait(future);
}

template <typename T, typename Read>
T Core::ReadSession(std::uint64_t handle, T fallback, Read read) {
  T out = std::move(fallback);
  (void)Run([&] {
    if (client::Session* session = FindSession(handle)) out = read(*session);
  });
  return out;
}

template <typename T, typename Read>
T Core::ReadElection(std::uint64_t handle, T fallback, Read read) {
  T out = std::move(fallback);
  (void)Run([&] {
    if (client::Election* election = FindElection(handle)) out = read(*election);
  });
  return out;
}

template <typename... Args>
std::function<void(Args...)> Core::Guard(std::uint64_t handle,
                                         std::function<void(Args...)> callback) {
  return [live = Live(handle), callback = std::move(callback)](Args... args) {
    if (*live) callback(std::forward<Args>(args)...);
  };
}

template <typename T>
Result<T> Core::Wait(std::future<Result<T>>& answer) {
  try {
    return answer.get();
  } catch (const std::future_error&) {
    return Status::Unavailable(kDropped);
  }
}

}  // namespace tenure::sdk
