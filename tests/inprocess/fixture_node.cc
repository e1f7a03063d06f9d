#include "inprocess/fixture_node.h"

#include <fmt/core.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <utility>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "raft/entry_codec.h"
#include "raft/fsm.h"

extern "C" {
#include <raft/fixture.h>
}

namespace tenure::inprocess {
namespace {

namespace asio = boost::asio;

// Fixture steps one request may take before the tier gives up on it (a
// single server commits in a handful).
constexpr int kStepsMax = 10'000;

}  // namespace

struct FixtureNode::Impl {
  struct Apply {
    struct raft_apply req {};
    Impl* impl = nullptr;
    ProposeDone done;
  };
  struct BarrierRequest {
    struct raft_barrier req {};
    Impl* impl = nullptr;
    std::function<void(Status)> done;  // empty: the leadership barrier
  };

  Impl(asio::io_context& io_context, state::Store& s) : io(io_context), store(s), bridge(&s) {}

  struct raft* r() {
    return raft_fixture_get(&fixture, 0);
  }
  const struct raft* r() const {
    return raft_fixture_get(const_cast<struct raft_fixture*>(&fixture), 0);
  }
  bool running() const { return started && !closed; }

  // Steps the fixture until no request is in flight, then does what Node's
  // AfterTurn does: leadership, completions, on_applied.
  void Drive() {
    drive_posted = false;
    if (!running()) return;
    for (int round = 0; round < 4; ++round) {
      for (int step = 0; step < kStepsMax && in_flight > 0; ++step) raft_fixture_step(&fixture);
      TENURE_ASSERT(in_flight == 0);
      AfterTurn();
      if (in_flight == 0) return;
    }
  }
  void PostDrive() {
    if (drive_posted) return;
    drive_posted = true;
    asio::post(io, [this, alive = alive] {
      if (*alive) Drive();
    });
  }

  void AfterTurn() {
    const bool leader = r()->state == RAFT_LEADER;
    if (leader && !reported_leader && !leadership_barrier) IssueLeadershipBarrier();
    if (!leader && reported_leader) {
      reported_leader = false;
      ready.push_back([this] {
        if (on_leadership) on_leadership(false);
      });
    }
    std::vector<std::function<void()>> callbacks;
    callbacks.swap(ready);
    for (auto& callback : callbacks) callback();
    if (bridge.generation() != applied_generation) {
      applied_generation = bridge.generation();
      if (on_applied) on_applied();
    }
  }

  void IssueLeadershipBarrier() {
    leadership_barrier = true;
    auto* request = new BarrierRequest;
    request->req.data = request;
    request->impl = this;
    if (raft_barrier(r(), &request->req, &Impl::BarrierDone) != 0) {
      delete request;
      leadership_barrier = false;
      return;
    }
    ++in_flight;
  }

  static void ApplyDone(struct raft_apply* req, int status, void* result) noexcept {
    auto* apply = static_cast<Apply*>(req->data);
    Impl* self = apply->impl;
    --self->in_flight;
    Result<state::ApplyResult> outcome =
        status == 0 ? Result<state::ApplyResult>(raft::FsmBridge::TakeResult(result))
                    : Result<state::ApplyResult>(Status::Unavailable(
                          fmt::format("raft: outcome unknown: {}", raft_strerror(status))));
    self->ready.push_back([done = std::move(apply->done), outcome = std::move(outcome)]() mutable {
      done(std::move(outcome));
    });
    delete apply;
  }

  static void BarrierDone(struct raft_barrier* req, int status) noexcept {
    auto* request = static_cast<BarrierRequest*>(req->data);
    Impl* self = request->impl;
    --self->in_flight;
    if (!request->done) {  // the leadership barrier
      self->leadership_barrier = false;
      if (status == 0 && self->r()->state == RAFT_LEADER) {
        self->reported_leader = true;
        self->ready.push_back([self] {
          if (self->on_leadership) self->on_leadership(true);
        });
      }
    } else {
      Status outcome = status == 0 ? Status() : consul::NoClusterLeader();
      self->ready.push_back(
          [done = std::move(request->done), outcome = std::move(outcome)] { done(outcome); });
    }
    delete request;
  }

  Status NotWritable() const {
    if (!running()) return Status::Unavailable("raft: node is not running");
    if (r()->state != RAFT_LEADER) return consul::NoClusterLeader();
    return Status();
  }

  void Fail(std::function<void(Status)> done, Status why) {
    asio::post(io, [done = std::move(done), why = std::move(why)] { done(why); });
  }

  asio::io_context& io;
  state::Store& store;
  raft::FsmBridge bridge;
  struct raft_fixture fixture {};
  bool started = false;
  bool closed = false;
  int in_flight = 0;
  bool drive_posted = false;
  bool reported_leader = false;
  bool leadership_barrier = false;
  std::uint64_t applied_generation = 0;
  std::vector<std::function<void()>> ready;
  std::function<void()> on_applied;
  std::function<void(Status)> on_broken;
  std::function<void(bool)> on_leadership;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
};

FixtureNode::FixtureNode(asio::io_context& io, state::Store& store)
    : impl_(std::make_unique<Impl>(io, store)) {}

FixtureNode::~FixtureNode() {
  *impl_->alive = false;
  if (impl_->started && !impl_->closed) {
    impl_->closed = true;
    raft_fixture_close(&impl_->fixture);  // fails what is pending; callbacks are dropped
  }
}

Status FixtureNode::Start() {
  Impl& impl = *impl_;
  if (raft_fixture_initialize(&impl.fixture) != 0)
    return Status::Internal("raft_fixture_initialize");
  impl.started = true;
  TENURE_ASSERT(raft_fixture_grow(&impl.fixture, impl.bridge.fsm()) == 0);
  impl.bridge.set_raft(impl.r());
  struct raft_configuration conf;
  TENURE_ASSERT(raft_fixture_configuration(&impl.fixture, 1, &conf) == 0);
  TENURE_ASSERT(raft_fixture_bootstrap(&impl.fixture, &conf) == 0);
  raft_configuration_close(&conf);
  TENURE_ASSERT(raft_fixture_start(&impl.fixture) == 0);
  // A sole voter elects itself after its election timeout.
  TENURE_ASSERT(raft_fixture_step_until_has_leader(&impl.fixture, 10'000));
  impl.PostDrive();
  return Status();
}

void FixtureNode::Stop(std::function<void()> done) {
  Impl& impl = *impl_;
  if (impl.running()) {
    impl.closed = true;
    raft_fixture_close(&impl.fixture);  // fails every pending request through its callback
    std::vector<std::function<void()>> callbacks;
    callbacks.swap(impl.ready);
    for (auto& callback : callbacks) callback();
  }
  asio::post(impl.io, std::move(done));
}

void FixtureNode::Propose(const state::Command& command, ProposeDone done) {
  Impl& impl = *impl_;
  if (Status why = impl.NotWritable(); !why.ok()) {
    asio::post(impl.io, [done = std::move(done), why = std::move(why)] { done(why); });
    return;
  }
  std::string framed;
  raft::EncodeEntry(command, &framed);
  struct raft_buffer buf = raft::CopyToRaftBuffer(framed);
  TENURE_ASSERT(buf.base != nullptr);
  auto* apply = new Impl::Apply;
  apply->req.data = apply;
  apply->impl = &impl;
  apply->done = std::move(done);
  if (int rv = raft_apply(impl.r(), &apply->req, &buf, 1, &Impl::ApplyDone); rv != 0) {
    raft_free(buf.base);
    Status why = Status::Unavailable(fmt::format("raft: write failed: {}", raft_strerror(rv)));
    asio::post(impl.io, [done = std::move(apply->done), why = std::move(why)] { done(why); });
    delete apply;
    return;
  }
  ++impl.in_flight;
  impl.PostDrive();
}

void FixtureNode::Barrier(std::function<void(Status)> done) {
  Impl& impl = *impl_;
  if (Status why = impl.NotWritable(); !why.ok()) return impl.Fail(std::move(done), why);
  auto* request = new Impl::BarrierRequest;
  request->req.data = request;
  request->impl = &impl;
  request->done = std::move(done);
  if (int rv = raft_barrier(impl.r(), &request->req, &Impl::BarrierDone); rv != 0) {
    auto failed = std::move(request->done);
    delete request;
    return impl.Fail(std::move(failed), Status::Unavailable(raft_strerror(rv)));
  }
  ++impl.in_flight;
  impl.PostDrive();
}

// What raft::Node answers on a sole voter.
void FixtureNode::TransferLeadership(std::uint64_t id, std::function<void(Status)> done) {
  impl_->Fail(std::move(done),
              Status::InvalidArgument(id == 0 ? std::string("no other voter to transfer to")
                                              : fmt::format("no other voter has id {}", id)));
}

void FixtureNode::AddVoter(std::uint64_t, const std::string&, std::function<void(Status)> done) {
  impl_->Fail(std::move(done), Status::Unavailable("in-process raft: one server only"));
}

// A server that is not a member gets raft::Node's answer; removing the one
// server is not modelled.
void FixtureNode::RemoveServer(std::uint64_t id, std::function<void(Status)> done) {
  impl_->Fail(std::move(done),
              id != 1 ? Status::InvalidArgument(fmt::format("server id {} is not a member", id))
                      : Status::Unavailable("in-process raft: one server only"));
}

void FixtureNode::JoinCluster(std::vector<std::string>) {}

bool FixtureNode::IsLeader() const { return impl_->running() && impl_->r()->state == RAFT_LEADER; }
std::uint64_t FixtureNode::id() const { return 1; }

std::string FixtureNode::LeaderAddress() const {
  if (!IsLeader()) return "";
  return impl_->r()->address;
}

std::uint64_t FixtureNode::LeaderId() const { return IsLeader() ? 1 : 0; }

std::vector<std::string> FixtureNode::PeerAddresses() const {
  std::vector<std::string> out;
  for (const auto& server : Configuration()) {
    if (server.voter) out.push_back(server.address);
  }
  return out;
}

std::vector<raft::ServerInfo> FixtureNode::Configuration() const {
  std::vector<raft::ServerInfo> out;
  if (!impl_->running()) return out;
  const struct raft_configuration& conf = impl_->r()->configuration;
  for (unsigned i = 0; i < conf.n; ++i) {
    out.push_back({conf.servers[i].id, conf.servers[i].address, conf.servers[i].role == RAFT_VOTER,
                   IsLeader() && conf.servers[i].id == 1});
  }
  return out;
}

bool FixtureNode::SoleVoter() const { return impl_->running(); }

std::uint64_t FixtureNode::ConfigurationIndex() const {
  return impl_->running() ? impl_->r()->configuration_index : 0;
}

DurationMs FixtureNode::LastContactMs() const { return 0; }
std::uint64_t FixtureNode::term() const { return impl_->running() ? impl_->r()->current_term : 0; }
std::uint64_t FixtureNode::LastIndex() const {
  return impl_->running() ? raft_last_index(const_cast<struct raft*>(impl_->r())) : 0;
}
std::uint64_t FixtureNode::CommitIndex() const {
  return impl_->running() ? impl_->r()->commit_index : 0;
}
std::uint64_t FixtureNode::AppliedIndex() const {
  return impl_->running() ? raft_last_applied(const_cast<struct raft*>(impl_->r())) : 0;
}
// One server: the leader's own progress only.
std::vector<raft::ServerProgress> FixtureNode::Replication() const {
  if (!IsLeader()) return {};
  return {{1, LastIndex(), 0}};
}
std::vector<raft::PeerAdvert> FixtureNode::PeerAdverts() const { return {}; }
raft::TransportCounters FixtureNode::transport_counters() const { return {}; }

std::string FixtureNode::StateName() const {
  if (!impl_->running()) return "Stopped";
  return raft::RaftStateName(*impl_->r());
}

void FixtureNode::set_on_applied(std::function<void()> callback) {
  impl_->on_applied = std::move(callback);
}
void FixtureNode::set_on_broken(std::function<void(Status)> callback) {
  impl_->on_broken = std::move(callback);
}
void FixtureNode::set_on_leadership(std::function<void(bool)> callback) {
  impl_->on_leadership = std::move(callback);
}

}  // namespace tenure::inprocess
