#include "raft/restore_decoder.h"

#include <condition_variable>
#include <mutex>
#include <utility>

#include "common/assert.h"
#include "common/background_thread.h"

namespace tenure::raft {

class RestoreDecoder::Job {
 public:
  explicit Job(std::string snapshot_bytes) : snapshot(std::move(snapshot_bytes)) {}

  const std::string snapshot;  // the bytes this state was decoded from
  std::thread thread;          // joinable while it decodes (and until joined)

  void Finish(Result<state::Store> decoded) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.emplace(std::move(decoded));
    done_ = true;
    done_cv_.notify_all();
  }
  bool done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  Result<state::Store> Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [this] { return done_; });
    TENURE_ASSERT(result_.has_value());
    Result<state::Store> taken = std::move(*result_);
    result_.reset();
    return taken;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::optional<Result<state::Store>> result_;
};

RestoreDecoder::RestoreDecoder(std::function<void()> on_done) : on_done_(std::move(on_done)) {}

RestoreDecoder::~RestoreDecoder() {
  for (const JobPtr& job : jobs_) {
    if (job->thread.joinable()) job->thread.join();
  }
}

bool RestoreDecoder::Done(const JobPtr& job) { return job == nullptr || job->done(); }

void RestoreDecoder::Forget(std::size_t i) {
  if (jobs_[i]->thread.joinable()) jobs_[i]->thread.join();
  jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
}

// Makes room for one more job by forgetting the oldest finished one (a
// state decoded for an entry that was never applied here: truncated away,
// or applied from a snapshot instead). False when every job still runs.
static bool MakeRoom(std::vector<RestoreDecoder::JobPtr>& jobs,
                     const std::function<void(std::size_t)>& forget) {
  if (jobs.size() < RestoreDecoder::kJobsMax) return true;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (RestoreDecoder::Done(jobs[i])) {
      forget(i);
      return true;
    }
  }
  return false;
}

void RestoreDecoder::Offer(std::string snapshot, Result<state::Store> decoded) {
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i]->snapshot == snapshot) {
      Forget(i);
      break;
    }
  }
  if (!MakeRoom(jobs_, [this](std::size_t i) { Forget(i); })) return;
  auto job = std::make_shared<Job>(std::move(snapshot));
  job->Finish(std::move(decoded));
  jobs_.push_back(std::move(job));
}

RestoreDecoder::JobPtr RestoreDecoder::Find(std::string_view snapshot) const {
  for (const JobPtr& job : jobs_) {
    if (job->snapshot == snapshot) return job;
  }
  return nullptr;
}

RestoreDecoder::JobPtr RestoreDecoder::Start(std::string_view snapshot) {
  if (JobPtr job = Find(snapshot)) return job;
  return Launch(std::string(snapshot));
}

RestoreDecoder::JobPtr RestoreDecoder::StartOwned(std::string snapshot) {
  if (JobPtr job = Find(snapshot)) return job;
  return Launch(std::move(snapshot));
}

RestoreDecoder::JobPtr RestoreDecoder::Launch(std::string snapshot) {
  if (!MakeRoom(jobs_, [this](std::size_t i) { Forget(i); })) return nullptr;
  auto job = std::make_shared<Job>(std::move(snapshot));
  // The thread sees only the job (which it keeps alive) and on_done_, which
  // outlives it: the destructor joins every thread first.
  job->thread = std::thread([job_raw = job.get(), this] {
    LowerThisThreadPriority();
    job_raw->Finish(state::Store::DecodeSnapshot(job_raw->snapshot));
    if (on_done_) on_done_();
  });
  jobs_.push_back(job);
  return job;
}

std::optional<Result<state::Store>> RestoreDecoder::Take(std::string_view snapshot) {
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i]->snapshot != snapshot) continue;
    Result<state::Store> decoded = jobs_[i]->Wait();
    Forget(i);
    return decoded;
  }
  return std::nullopt;
}

}  // namespace tenure::raft
