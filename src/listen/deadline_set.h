// DeadlineSet: every connection's deadline timer as one ordered set of
// (when, owner) behind one asio timer armed for the earliest (decision 0034,
// addendum). An entry costs about 64 bytes where an asio timer and its
// pending wait cost about 250, and 10,000 woken watchers each arm an idle
// deadline at once. Loop thread only.
//
// Like ReadinessSet it knows nothing of connections: an owner is an opaque
// pointer, and the owner remembers the time it armed (to remove the entry).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "common/types.h"

namespace tenure::listen {

class DeadlineSet {
 public:
  // Called on the loop for each entry that came due, after the entry left
  // the set; the owner may add a later one, or remove others.
  using OnDue = void (*)(void* owner);

  DeadlineSet(boost::asio::io_context& io, OnDue on_due);
  ~DeadlineSet();
  DeadlineSet(const DeadlineSet&) = delete;
  DeadlineSet& operator=(const DeadlineSet&) = delete;

  // Fires OnDue(owner) once the steady clock reaches `at_ms`.
  void Add(MonoMs at_ms, void* owner);
  // Takes back an entry added with the same two values; with none left, no
  // wait is pending, so nothing keeps the loop running.
  void Remove(MonoMs at_ms, void* owner);
  std::size_t size() const;

  struct State;  // defined in the .cc file

 private:
  std::shared_ptr<State> state_;  // shared with the pending wait
};

}  // namespace tenure::listen
