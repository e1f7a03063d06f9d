#include "algos.h"

#include <fmt/core.h>

namespace tenure::algos {

const std::vector<Approach>& AllApproaches() {
  static const std::vector<Approach> all = {Approach::kBully, Approach::kRing,
                                            Approach::kLease, Approach::kFencedLease,
                                            Approach::kRedis, Approach::kTenure};
  return all;
}

const std::vector<Schedule>& AllSchedules() {
  static const std::vector<Schedule> all = {Schedule::kPartition, Schedule::kPause,
                                            Schedule::kClock,     Schedule::kCrash,
                                            Schedule::kLoss,      Schedule::kRandom};
  return all;
}

std::string Name(Approach approach) {
  switch (approach) {
    case Approach::kBully:
      return "bully";
    case Approach::kRing:
      return "ring";
    case Approach::kLease:
      return "lease";
    case Approach::kFencedLease:
      return "fenced-lease";
    case Approach::kRedis:
      return "redis";
    case Approach::kTenure:
      return "tenure";
  }
  return "?";
}

std::string Name(Schedule schedule) {
  switch (schedule) {
    case Schedule::kPartition:
      return "partition";
    case Schedule::kPause:
      return "pause";
    case Schedule::kClock:
      return "clock";
    case Schedule::kCrash:
      return "crash";
    case Schedule::kLoss:
      return "loss";
    case Schedule::kRandom:
      return "random";
  }
  return "?";
}

std::optional<Approach> ParseApproach(const std::string& name) {
  for (Approach a : AllApproaches()) {
    if (Name(a) == name) return a;
  }
  return std::nullopt;
}

std::optional<Schedule> ParseSchedule(const std::string& name) {
  for (Schedule s : AllSchedules()) {
    if (Name(s) == name) return s;
  }
  return std::nullopt;
}

// --- Plans ---------------------------------------------------------------------

namespace {

Fault RandomFault(Rng& rng) {
  Fault f;
  f.kind = static_cast<Fault::Kind>(rng.Index(6));
  f.start = rng.Uniform(10'000, 100'000);
  f.end = f.start + rng.Uniform(5'000, 45'000);
  if (f.kind == Fault::Kind::kLoss) f.amount = rng.Uniform(10, 50);
  if (f.kind == Fault::Kind::kServiceClock) f.amount = rng.Uniform(2'000, 20'000);
  return f;
}

std::string KindName(Fault::Kind kind) {
  switch (kind) {
    case Fault::Kind::kPartition:
      return "partition";
    case Fault::Kind::kPause:
      return "pause";
    case Fault::Kind::kCrash:
      return "crash";
    case Fault::Kind::kServiceCrash:
      return "service-crash";
    case Fault::Kind::kServiceClock:
      return "service-clock-step";
    case Fault::Kind::kLoss:
      return "loss";
  }
  return "?";
}

}  // namespace

Plan MakePlan(Schedule schedule, std::uint64_t seed) {
  Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(schedule));
  Plan plan;
  for (unsigned i = 0; i < plan.replicas; ++i)
    plan.drift_ppm.push_back(rng.Uniform(-10'000, 10'000));
  Ms start = 30'000 + rng.Uniform(-2'000, 2'000);
  using K = Fault::Kind;
  switch (schedule) {
    case Schedule::kPartition:
      plan.faults.push_back({K::kPartition, start, start + 30'000, 0});
      break;
    case Schedule::kPause:
      plan.faults.push_back({K::kPause, start, start + 45'000, 0});
      break;
    case Schedule::kClock:
      plan.faults.push_back({K::kServiceClock, start, start, 20'000});
      break;
    case Schedule::kCrash:
      plan.faults.push_back({K::kCrash, start, start + 30'000, 0});
      plan.faults.push_back({K::kServiceCrash, start + 60'000, start + 62'000, 0});
      break;
    case Schedule::kLoss:
      plan.faults.push_back({K::kLoss, start, start + 60'000, 30});
      break;
    case Schedule::kRandom: {
      int n = static_cast<int>(rng.Uniform(2, 4));
      for (int i = 0; i < n; ++i) plan.faults.push_back(RandomFault(rng));
      break;
    }
  }
  return plan;
}

std::string Describe(const Plan& plan) {
  std::string out;
  for (const Fault& f : plan.faults) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} {:.1f}-{:.1f}s", KindName(f.kind), f.start / 1000.0, f.end / 1000.0);
    if (f.amount != 0) out += fmt::format(" ({})", f.amount);
  }
  return out;
}

// --- Recorder ------------------------------------------------------------------

Recorder::Recorder(unsigned replicas, bool keep_timeline)
    : replicas_(replicas),
      keep_timeline_(keep_timeline),
      leads_(replicas, false),
      running_(replicas, true) {}

void Recorder::Observe(Ms now, const std::vector<bool>& leads, const std::vector<bool>& running) {
  if (now > last_) {
    if (acting_ >= 2) metrics_.two_leaders_ms += now - last_;
    if (acting_ == 0) metrics_.no_leader_ms += now - last_;
    last_ = now;
  }
  acting_ = 0;
  for (unsigned i = 0; i < replicas_; ++i) {
    bool acting = leads[i] && running[i];
    if (acting) ++acting_;
    if (keep_timeline_) {
      if (running[i] != running_[i]) timeline_.push_back({now, i, running[i] ? "up" : "down"});
      if (acting != (leads_[i] && running_[i])) {
        timeline_.push_back({now, i, acting ? "lead" : "follow"});
      }
    }
  }
  leads_ = leads;
  running_ = running;
}

void Recorder::OnWrite(Ms now, unsigned replica, std::uint64_t grant, std::uint64_t newest,
                       bool accepted) {
  if (!accepted) {
    ++metrics_.writes_refused;
    if (keep_timeline_) timeline_.push_back({now, replica, "write-refused"});
    return;
  }
  ++metrics_.writes_accepted;
  bool stale = grant < newest;
  if (stale) ++metrics_.stale_writes;
  if (keep_timeline_) timeline_.push_back({now, replica, stale ? "write-stale" : "write-ok"});
}

void Recorder::Finish(Ms now) { Observe(now, leads_, running_); }

RunResult Run(Approach approach, Schedule schedule, std::uint64_t seed, bool keep_timeline) {
  Plan plan = MakePlan(schedule, seed);
  Timing timing;
  RunResult result = approach == Approach::kTenure
                         ? RunTenure(plan, timing, seed, keep_timeline)
                         : RunModel(approach, plan, timing, seed, keep_timeline);
  result.plan = Describe(plan);
  return result;
}

}  // namespace tenure::algos
