#include "sim_disk.h"

#include <cstring>
#include <map>

#include "common/assert.h"

namespace tenure::sim {
namespace {

// raft_io has no spare user pointer (data belongs to raft): find the
// wrapper by the io's address.
std::map<const struct raft_io*, SimDisk*>& Registry() {
  static std::map<const struct raft_io*, SimDisk*> registry;
  return registry;
}

}  // namespace

SimDisk::SimDisk(struct raft_fixture* fixture, unsigned i)
    : fixture_(fixture),
      server_(i),
      io_(&fixture->servers[i].io),
      bootstrap_(io_->bootstrap),
      append_(io_->append),
      set_term_(io_->set_term),
      set_vote_(io_->set_vote),
      truncate_(io_->truncate),
      snapshot_put_(io_->snapshot_put) {
  TENURE_ASSERT(Registry().emplace(io_, this).second);
  io_->bootstrap = &SimDisk::Bootstrap;
  io_->append = &SimDisk::Append;
  io_->set_term = &SimDisk::SetTerm;
  io_->set_vote = &SimDisk::SetVote;
  io_->truncate = &SimDisk::Truncate;
  io_->snapshot_put = &SimDisk::SnapshotPut;
}

SimDisk::~SimDisk() {
  io_->bootstrap = bootstrap_;
  io_->append = append_;
  io_->set_term = set_term_;
  io_->set_vote = set_vote_;
  io_->truncate = truncate_;
  io_->snapshot_put = snapshot_put_;
  Registry().erase(io_);
}

SimDisk* SimDisk::Of(struct raft_io* io) {
  auto it = Registry().find(io);
  TENURE_ASSERT(it != Registry().end());
  return it->second;
}

void SimDisk::Fail(unsigned ops, int after, int times) {
  ops_ = ops;
  after_ = after;
  times_ = times;
}

bool SimDisk::Tick(unsigned op) {
  if (times_ == 0 || (ops_ & op) == 0) return false;
  if (after_ > 0) {
    --after_;
    return false;
  }
  if (times_ > 0) --times_;
  ++failures_;
  return true;
}

void SimDisk::ReleaseAppends() {
  holding_ = false;
  while (!held_.empty()) {
    HeldAppend held = held_.front();
    held_.pop_front();
    TENURE_ASSERT(append_(io_, held.req, held.entries, held.n, held.cb) == 0);
  }
}

void SimDisk::DropFrom(raft_index index) {
  while (!entries_.empty() && last_index() >= index) entries_.pop_back();
  if (entries_.empty()) first_index_ = index;
}

bool SimDisk::ReachesBackTo(raft_index snapshot_index) const {
  return snapshot_index == 0 ? first_index_ == 1 : first_index_ <= snapshot_index + 1;
}

void SimDisk::HandLogToFixture(raft_index snapshot_index) {
  TENURE_ASSERT(ReachesBackTo(snapshot_index));
  TENURE_ASSERT(held_.empty());
  while (!entries_.empty() && first_index_ <= snapshot_index) {
    entries_.pop_front();
    ++first_index_;
  }
  if (entries_.empty()) first_index_ = snapshot_index + 1;
  TENURE_ASSERT(truncate_(io_, 1) == 0);  // position 1: empties the fixture's copy
  for (const Entry& stored : entries_) {
    struct raft_entry entry {};
    entry.term = stored.term;
    entry.type = stored.type;
    entry.buf.len = stored.bytes.size();
    entry.buf.base = raft_malloc(entry.buf.len > 0 ? entry.buf.len : 1);
    std::memcpy(entry.buf.base, stored.bytes.data(), stored.bytes.size());
    entry.batch = nullptr;
    raft_fixture_add_entry(fixture_, server_, &entry);  // takes the buffer
  }
}

int SimDisk::Bootstrap(struct raft_io* io, const struct raft_configuration* conf) {
  SimDisk* self = Of(io);
  int rv = self->bootstrap_(io, conf);
  if (rv != 0) return rv;
  // The fixture stored the configuration as entry 1: copy it.
  raft_term term = 0;
  raft_id voted_for = 0;
  struct raft_snapshot* snapshot = nullptr;
  raft_index start_index = 0;
  struct raft_entry* entries = nullptr;
  std::size_t n = 0;
  TENURE_ASSERT(io->load(io, &term, &voted_for, &snapshot, &start_index, &entries, &n) == 0);
  TENURE_ASSERT(snapshot == nullptr && n == 1);
  self->first_index_ = 1;
  self->entries_.clear();
  self->entries_.push_back(
      {entries[0].term, entries[0].type,
       std::string(static_cast<const char*>(entries[0].buf.base), entries[0].buf.len)});
  raft_free(entries[0].batch);
  raft_free(entries);
  return 0;
}

int SimDisk::Append(struct raft_io* io, struct raft_io_append* req,
                    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb) {
  SimDisk* self = Of(io);
  if (self->Tick(kDiskAppend)) return RAFT_IOERR;
  if (self->holding_) {
    self->held_.push_back({req, entries, n, cb});
  } else {
    int rv = self->append_(io, req, entries, n, cb);
    if (rv != 0) return rv;
  }
  for (unsigned k = 0; k < n; ++k) {
    self->entries_.push_back(
        {entries[k].term, entries[k].type,
         std::string(static_cast<const char*>(entries[k].buf.base), entries[k].buf.len)});
  }
  return 0;
}

// Not while the server is a candidate: libraft 0.15 then corrupts itself
// (convert.c, convertToCandidate: when electionStart fails it sets the state
// back to follower without resetting follower_state, a union with
// candidate_state, and the next state change frees a garbage pointer).
bool SimDisk::TickTermOrVote(struct raft_io* io) {
  const auto* r = static_cast<const struct raft*>(io->data);
  if (r != nullptr && r->state == RAFT_CANDIDATE) return false;
  return Tick(kDiskTermAndVote);
}

int SimDisk::SetTerm(struct raft_io* io, raft_term term) {
  SimDisk* self = Of(io);
  if (self->TickTermOrVote(io)) return RAFT_IOERR;
  return self->set_term_(io, term);
}

int SimDisk::SetVote(struct raft_io* io, raft_id server_id) {
  SimDisk* self = Of(io);
  if (self->TickTermOrVote(io)) return RAFT_IOERR;
  return self->set_vote_(io, server_id);
}

// raft's truncations (a follower dropping a conflicting suffix) go to this
// log only; the fixture's own copy is never read again before a restart
// replaces it. The fixture empties its copy itself (position 1) when it
// stores an InstallSnapshot, and asserts that succeeds.
int SimDisk::Truncate(struct raft_io* io, raft_index index) {
  SimDisk* self = Of(io);
  if (index == 1) return self->truncate_(io, 1);
  if (self->Tick(kDiskTruncate)) return RAFT_IOERR;
  self->DropFrom(index);
  return 0;
}

// An InstallSnapshot (no trailing entries) replaces the whole log.
int SimDisk::SnapshotPut(struct raft_io* io, unsigned trailing, struct raft_io_snapshot_put* req,
                         const struct raft_snapshot* snapshot, raft_io_snapshot_put_cb cb) {
  SimDisk* self = Of(io);
  int rv = self->snapshot_put_(io, trailing, req, snapshot, cb);
  if (rv == 0 && trailing == 0) {
    self->entries_.clear();
    self->first_index_ = snapshot->index + 1;
  }
  return rv;
}

}  // namespace tenure::sim
