// FixtureNode: raft::Consensus on libraft's raft_fixture with one server,
// for the in-process API tier. The Store is fed by the real FsmBridge from
// entries framed by the real codec; libraft itself runs unchanged, only its
// disk and network are the fixture's in-memory stubs and its time the
// fixture's. Leadership is reported after a barrier, as Node does, and every
// callback runs from the io_context, never from inside libraft.
//
// One server only: membership changes and leadership transfer answer that
// they are not modelled (their handlers' checks before raft are still
// tested; the real-process cluster tests cover the rest).
#pragma once

#include <memory>

#include "raft/consensus.h"

namespace boost::asio {
class io_context;
}

namespace tenure::inprocess {

class FixtureNode final : public raft::Consensus {
 public:
  FixtureNode(boost::asio::io_context& io, state::Store& store);
  ~FixtureNode() override;
  FixtureNode(const FixtureNode&) = delete;
  FixtureNode& operator=(const FixtureNode&) = delete;

  Status Start() override;
  void Stop(std::function<void()> done) override;
  void Propose(const state::Command& command, ProposeDone done) override;
  void Barrier(std::function<void(Status)> done) override;
  void TransferLeadership(std::uint64_t id, std::function<void(Status)> done) override;
  void AddVoter(std::uint64_t id, const std::string& address,
                std::function<void(Status)> done) override;
  void RemoveServer(std::uint64_t id, std::function<void(Status)> done) override;
  void JoinCluster(std::vector<std::string> raft_addresses) override;

  bool IsLeader() const override;
  std::uint64_t id() const override;
  std::string LeaderAddress() const override;
  std::uint64_t LeaderId() const override;
  std::vector<std::string> PeerAddresses() const override;
  std::vector<raft::ServerInfo> Configuration() const override;
  bool SoleVoter() const override;
  std::uint64_t ConfigurationIndex() const override;
  DurationMs LastContactMs() const override;
  std::uint64_t term() const override;
  std::uint64_t LastIndex() const override;
  std::uint64_t CommitIndex() const override;
  std::uint64_t AppliedIndex() const override;
  std::vector<raft::ServerProgress> Replication() const override;
  std::string DiskFailure() const override { return ""; }  // no disk
  std::vector<raft::PeerAdvert> PeerAdverts() const override;
  raft::TransportCounters transport_counters() const override;
  std::string StateName() const override;

  void set_on_applied(std::function<void()> callback) override;
  void set_on_broken(std::function<void(Status why)> callback) override;
  void set_on_leadership(std::function<void(bool is_leader)> callback) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::inprocess
