// Node's public methods: each hands the call to Node::Impl (node.cc,
// node_requests.cc) or reads its state on the loop thread (node_impl.h).
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on

#include <memory>
#include <string>
#include <vector>

#include "raft/node.h"
#include "raft/node_impl.h"

namespace tenure::raft {

namespace asio = boost::asio;

Node::Node(asio::io_context& io, state::Store& store, NodeOptions options)
    : impl_(std::make_unique<Impl>(io, store, std::move(options))) {}

Node::~Node() = default;

Status Node::Start() { return impl_->Start(); }

void Node::Stop(std::function<void()> done) { impl_->Stop(std::move(done)); }

void Node::Propose(const state::Command& command, ProposeDone done) {
  impl_->Propose(command, std::move(done));
}

void Node::Barrier(std::function<void(Status)> done) { impl_->Barrier(std::move(done)); }
void Node::TransferLeadership(std::uint64_t id, std::function<void(Status)> done) {
  impl_->TransferLeadership(id, std::move(done));
}
void Node::AddVoter(std::uint64_t id, const std::string& address,
                    std::function<void(Status)> done) {
  impl_->AddVoter(id, address, std::move(done));
}
void Node::RemoveServer(std::uint64_t id, std::function<void(Status)> done) {
  impl_->RemoveServer(id, std::move(done));
}

bool Node::IsLeader() const { return impl_->RaftLeader(); }

std::uint64_t Node::id() const { return impl_->options_.id; }

std::string Node::LeaderAddress() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return "";
  raft_id leader_id = 0;
  const char* address = nullptr;
  raft_leader(&impl_->raft_, &leader_id, &address);
  return leader_id != 0 && address != nullptr ? std::string(address) : std::string();
}

std::uint64_t Node::LeaderId() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return 0;
  raft_id leader_id = 0;
  const char* address = nullptr;
  raft_leader(&impl_->raft_, &leader_id, &address);
  return leader_id;
}

std::vector<std::string> Node::PeerAddresses() const {
  std::vector<std::string> out;
  if (impl_->phase_ != Impl::Phase::kRunning) return out;
  const struct raft_configuration& conf = impl_->raft_.configuration;
  for (unsigned i = 0; i < conf.n; ++i) {
    if (conf.servers[i].role == RAFT_VOTER) out.emplace_back(conf.servers[i].address);
  }
  return out;
}

std::vector<ServerInfo> Node::Configuration() const {
  std::vector<ServerInfo> out;
  if (impl_->phase_ != Impl::Phase::kRunning) return out;
  raft_id leader_id = 0;
  const char* leader_address = nullptr;
  raft_leader(&impl_->raft_, &leader_id, &leader_address);
  const struct raft_configuration& conf = impl_->raft_.configuration;
  for (unsigned i = 0; i < conf.n; ++i) {
    const struct raft_server& server = conf.servers[i];
    out.push_back({server.id, server.address, server.role == RAFT_VOTER,
                   leader_id != 0 && server.id == leader_id});
  }
  return out;
}

bool Node::SoleVoter() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return false;
  const struct raft_configuration& conf = impl_->raft_.configuration;
  unsigned voters = 0;
  bool self_votes = false;
  for (unsigned i = 0; i < conf.n; ++i) {
    if (conf.servers[i].role != RAFT_VOTER) continue;
    ++voters;
    self_votes = self_votes || conf.servers[i].id == impl_->raft_.id;
  }
  return voters == 1 && self_votes;
}

std::uint64_t Node::ConfigurationIndex() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return 0;
  const struct raft& r = impl_->raft_;
  return r.configuration_uncommitted_index != 0 ? r.configuration_uncommitted_index
                                                : r.configuration_index;
}

// Poll-based approximation. On a follower that knows its leader, libraft
// restarts election_timer_start at every AppendEntries/InstallSnapshot from
// that leader (and, rarely, when granting a vote), so "now minus it" is the
// time since the last leader message. Without a known leader (candidate, or
// a follower whose election timer fired) it is the time since the last
// AfterTurn that saw one. Before any contact it counts from Start.
DurationMs Node::LastContactMs() const {
  const Impl& impl = *impl_;
  if (impl.phase_ == Impl::Phase::kIdle) return 0;
  if (impl.RaftLeader()) return 0;
  std::uint64_t now = impl.UvNowMs();
  std::uint64_t contact = impl.last_contact_uv_ms_;
  if (impl.phase_ == Impl::Phase::kRunning && impl.raft_.state == RAFT_FOLLOWER &&
      impl.raft_.follower_state.current_leader.id != 0) {
    contact = impl.raft_.election_timer_start;
  }
  return now > contact ? static_cast<DurationMs>(now - contact) : 0;
}

std::uint64_t Node::term() const { return impl_->raft_.current_term; }

std::uint64_t Node::LastIndex() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return 0;
  // raft_last_index only reads, but libraft's API is not const-correct.
  return raft_last_index(const_cast<struct raft*>(&impl_->raft_));
}

std::uint64_t Node::FirstLogIndex() const {
  return impl_->phase_ == Impl::Phase::kRunning ? impl_->raft_.log.offset + 1 : 0;
}

std::uint64_t Node::CommitIndex() const {
  return impl_->phase_ == Impl::Phase::kRunning ? impl_->raft_.commit_index : 0;
}

std::uint64_t Node::AppliedIndex() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return 0;
  return raft_last_applied(const_cast<struct raft*>(&impl_->raft_));
}

std::string Node::DiskFailure() const {
  return impl_->disk_failed_ ? std::string(impl_->last_disk_failure_.message()) : std::string();
}

std::vector<ServerProgress> Node::Replication() const {
  std::vector<ServerProgress> out;
  const struct raft& r = impl_->raft_;
  if (impl_->phase_ != Impl::Phase::kRunning || r.state != RAFT_LEADER) return out;
  for (unsigned i = 0; i < r.configuration.n; ++i) {
    const raft_id id = r.configuration.servers[i].id;
    if (id == r.id) {
      out.push_back({id, LastIndex(), 0});
      continue;
    }
    DurationMs heard = impl_->transport_ ? impl_->transport_->SinceHeardMs(id) : -1;
    out.push_back({id, r.leader_state.progress[i].match_index, heard});
  }
  return out;
}

std::vector<PeerAdvert> Node::PeerAdverts() const {
  return impl_->transport_ ? impl_->transport_->Adverts() : std::vector<PeerAdvert>();
}

bool Node::HasRaftLinkFrom(const std::string& ip) const {
  return impl_->transport_ != nullptr && impl_->transport_->HasLinkFrom(ip);
}

std::uint64_t Node::leaders_forgotten() const { return impl_->leaders_forgotten_; }

TransportCounters Node::transport_counters() const {
  TransportCounters counters =
      impl_->transport_ ? impl_->transport_->counters() : TransportCounters();
  counters.leaders_forgotten = impl_->leaders_forgotten_;
  return counters;
}

void Node::SetRaftTls(std::shared_ptr<const tls::Context> accept,
                      std::shared_ptr<const tls::Context> dial) {
  impl_->options_.tls_accept = accept;
  impl_->options_.tls_dial = dial;
  if (impl_->transport_) impl_->transport_->SetTls(std::move(accept), std::move(dial));
}

std::uint16_t Node::raft_port() const { return impl_->transport_ ? impl_->transport_->port() : 0; }

std::string Node::StateName() const {
  if (impl_->phase_ != Impl::Phase::kRunning) return "Stopped";
  return RaftStateName(impl_->raft_);
}

void Node::JoinCluster(std::vector<std::string> raft_addresses) {
  impl_->JoinCluster(std::move(raft_addresses));
}

void Node::set_on_broken(std::function<void(Status why)> callback) {
  impl_->on_broken_ = std::move(callback);
}

void Node::set_on_applied(std::function<void()> callback) {
  impl_->on_applied_ = std::move(callback);
}

void Node::set_apply_histogram(Histogram* histogram) { impl_->fsm_.set_apply_histogram(histogram); }
void Node::set_snapshot_metrics(SnapshotMetrics* metrics) {
  impl_->fsm_.set_snapshot_metrics(metrics);
}

void Node::set_log_append_histogram(Histogram* histogram) { impl_->append_histogram_ = histogram; }

void Node::set_on_leadership(std::function<void(bool is_leader)> callback) {
  impl_->on_leadership_ = std::move(callback);
}

}  // namespace tenure::raft
