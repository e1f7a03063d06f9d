// RestoreDecoder: decodes the state a snapshot-restore entry carries
// (state::RestoreState) on a thread of its own, so that applying the entry
// swaps in a Store already built instead of holding the loop thread for the
// decode: about 2 s for a million keys on the 2-core machine, four times the
// election timeout (decision 0046, docs/limits.md "Loop stalls").
//
// Two ways in: Offer() hands over a state the leader already decoded while
// it checked the file (http/handlers/snapshot.cc, off the loop); Start()
// begins a decode of bytes seen in a log append (a follower's copy of the
// entry, Node's append wrapper). Take() gives the apply the decoded state for
// exactly its bytes (compared whole, so a state is never applied for other
// bytes), waiting for the job if it still runs. Jobs are few and bounded
// (kJobsMax): a restore that finds no room is decoded at its apply, as
// before, which is slower and decides the same.
//
// Loop thread only, except `on_done`, which the worker threads call when a
// job finishes (it must only post to the loop). The destructor waits for
// running jobs.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "state/store.h"

namespace tenure::raft {

class RestoreDecoder {
 public:
  // At most this many decoded or decoding states are kept: each may be a
  // second copy of a state of up to 64 MiB of snapshot (docs/limits.md).
  static constexpr std::size_t kJobsMax = 2;

  explicit RestoreDecoder(std::function<void()> on_done = {});
  ~RestoreDecoder();
  RestoreDecoder(const RestoreDecoder&) = delete;
  RestoreDecoder& operator=(const RestoreDecoder&) = delete;

  // A job's handle, for whoever waits on it (a held log append).
  class Job;
  using JobPtr = std::shared_ptr<Job>;

  // A state decoded elsewhere from exactly `snapshot`.
  void Offer(std::string snapshot, Result<state::Store> decoded);
  // The job for `snapshot`: an existing one for the same bytes, or a decode
  // started now; nullptr when kJobsMax jobs are still running.
  JobPtr Start(std::string_view snapshot);
  // The same for bytes handed over (a large restore's gathered chunks,
  // decision 0050): not copied again.
  JobPtr StartOwned(std::string snapshot);
  // Whether `job` has finished decoding.
  static bool Done(const JobPtr& job);
  // The decoded state for exactly `snapshot`, waiting for its job if needed;
  // nullopt when no job has these bytes. The job is forgotten.
  std::optional<Result<state::Store>> Take(std::string_view snapshot);

  std::size_t jobs() const { return jobs_.size(); }

 private:
  void Forget(std::size_t i);
  JobPtr Find(std::string_view snapshot) const;  // a job for exactly these bytes
  JobPtr Launch(std::string snapshot);

  std::function<void()> on_done_;
  std::vector<JobPtr> jobs_;
};

}  // namespace tenure::raft
