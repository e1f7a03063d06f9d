// The etcd requests both of tenure_vs's etcd clients send, and the watch
// workload's count (etcd_workload.h).
#include "etcd_workload.h"

#include <utility>

namespace tenure::vs::etcd_workload {

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& c = prefix.back();
    if (static_cast<unsigned char>(c) < 0xff) {
      c = static_cast<char>(c + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

std::vector<pb::PutRequest> PutRequests(const Options& o) {
  std::string value(static_cast<std::size_t>(o.value_bytes), 'v');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);
  std::vector<pb::PutRequest> reqs;
  for (int k = 0; k < o.keys; ++k) {
    pb::PutRequest req;
    req.set_key(fmt::format("bench/k{:04}", k));
    req.set_value(value);
    reqs.push_back(std::move(req));
  }
  return reqs;
}

std::size_t NextPut(std::uint64_t* rng, std::size_t count) {
  *rng ^= *rng >> 12;
  *rng ^= *rng << 25;
  *rng ^= *rng >> 27;
  return static_cast<std::size_t>((*rng * 0x2545F4914F6CDD1DULL) % count);
}

namespace {

// The oldest (ASCEND) or newest (DESCEND) key under the prefix by creation.
void FirstCreated(const std::string& prefix, pb::RangeRequest::SortOrder order,
                  pb::RangeRequest* r) {
  r->set_key(prefix);
  r->set_range_end(PrefixEnd(prefix));
  r->set_sort_target(pb::RangeRequest::CREATE);
  r->set_sort_order(order);
  r->set_limit(1);
}

}  // namespace

pb::TxnRequest MutexLockTxn(const std::string& prefix, const std::string& key, std::int64_t lease) {
  pb::TxnRequest txn;
  pb::Compare* cmp = txn.add_compare();
  cmp->set_result(pb::Compare::EQUAL);
  cmp->set_target(pb::Compare::CREATE);
  cmp->set_key(key);
  cmp->set_create_revision(0);
  pb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_lease(lease);
  FirstCreated(prefix, pb::RangeRequest::ASCEND, txn.add_success()->mutable_request_range());
  txn.add_failure()->mutable_request_range()->set_key(key);
  FirstCreated(prefix, pb::RangeRequest::ASCEND, txn.add_failure()->mutable_request_range());
  return txn;
}

LockTxnAnswer ReadMutexLockTxn(const pb::TxnResponse& answer) {
  LockTxnAnswer out;
  if (answer.responses_size() != 2) {
    out.error = fmt::format("{} answers, not 2", answer.responses_size());
    return out;
  }
  out.my_rev = answer.header().revision();
  if (!answer.succeeded()) {
    const auto& mine = answer.responses(0).response_range();
    if (mine.kvs_size() == 0) {
      out.error = "own key missing";
      return out;
    }
    out.my_rev = mine.kvs(0).create_revision();
  }
  const auto& owner = answer.responses(1).response_range();
  out.held = owner.kvs_size() == 0 || owner.kvs(0).create_revision() == out.my_rev;
  return out;
}

pb::RangeRequest OlderKeyRange(const std::string& prefix, std::int64_t my_rev) {
  pb::RangeRequest r;
  FirstCreated(prefix, pb::RangeRequest::DESCEND, &r);
  r.set_max_create_revision(my_rev - 1);
  return r;
}

pb::WatchRequest DeleteWait::Create(const std::string& key, std::int64_t revision,
                                    std::function<void()> then) {
  then_ = std::move(then);
  creating_ = true;
  pb::WatchRequest req;
  req.mutable_create_request()->set_key(key);
  req.mutable_create_request()->set_start_revision(revision);
  return req;
}

std::function<void()> DeleteWait::OnAnswer(const pb::WatchResponse& answer,
                                           pb::WatchRequest* cancel) {
  if (answer.created() && creating_) {
    creating_ = false;
    watch_id_ = answer.watch_id();
  }
  if (answer.canceled() || answer.watch_id() != watch_id_ || !then_) return nullptr;
  for (const auto& event : answer.events()) {
    if (event.type() == mvccpb::Event::DELETE) {
      cancel->mutable_cancel_request()->set_watch_id(watch_id_);
      watch_id_ = -1;
      return std::exchange(then_, nullptr);
    }
  }
  return nullptr;
}

bool DeleteWait::Abandon() { return static_cast<bool>(std::exchange(then_, nullptr)); }

void FanOut::OnAnswer(int watcher, const pb::WatchResponse& answer) {
  if (answer.created()) {
    ++created_;
    return;
  }
  for (int e = 0; e < answer.events_size(); ++e) {
    std::int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - fire_time_).count();
    ++woken_;
    if (!fired_ || answer.events(e).type() != mvccpb::Event::PUT) {
      Fail(fmt::format("watcher {}: unexpected event (fired {})", watcher, fired_));
    } else {
      wake_ns_.push_back(ns);
      round_last_ = std::max(round_last_, ns);
    }
  }
}

void FanOut::Fail(std::string why) {
  if (errors_++ == 0) first_error_ = std::move(why);
}

void FanOut::StartRound() {
  woken_ = 0;
  round_last_ = 0;
  fire_time_ = Clock::now();
  fired_ = true;
}

// etcd's watches stay armed: the next round needs nothing but its put.
void FanOut::EndRound() {
  fired_ = false;
  last_ns_.push_back(round_last_);
}

void FanOut::AddTo(Result* r, std::size_t conns, long rss_before, long rss_parked) const {
  std::vector<std::int64_t> wake = wake_ns_, last = last_ns_;
  std::sort(wake.begin(), wake.end());
  std::sort(last.begin(), last.end());
  r->Add("wake_p50_ms", PercentileMs(wake, 0.5));
  r->Add("wake_p99_ms", PercentileMs(wake, 0.99));
  r->Add("last_median_ms", PercentileMs(last, 0.5));
  r->Add("last_max_ms", PercentileMs(last, 1.0));
  r->Add("wakeups", static_cast<double>(wake.size()));
  r->Add("conns", static_cast<double>(conns));
  if (rss_before > 0 && rss_parked > 0) {
    r->Add("rss_before_mib", rss_before / 1024.0);
    r->Add("rss_parked_mib", rss_parked / 1024.0);
    r->Add("bytes_per_watcher",
           static_cast<double>(rss_parked - rss_before) * 1024.0 / static_cast<double>(watchers_));
  }
  if (errors_ > 0) r->error = fmt::format("{} errors; first: {}", errors_, first_error_);
}

}  // namespace tenure::vs::etcd_workload
