// GET /v1/snapshot and PUT /v1/snapshot: Consul's paths for saving and
// restoring the whole state (docs/snapshots.md, decision 0024). The file is
// tenure's own (state/backup_file.h), not Consul's archive.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "common/limits.h"
#include "common/log.h"
#include "http/api.h"
#include "http/off_loop_work.h"
#include "state/backup_file.h"

namespace tenure::http {

// The state as of one applied index: the Store is read on the loop thread
// between two applies, so the file never mixes two states however hard
// clients write. Served by the leader, or any server with ?stale.
void Api::SnapshotSave(const CallPtr& call) {
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  const state::Store& store = server_.store();
  std::string file = state::EncodeBackup(store, server_.Health().term, server_.clock().NowUnixMs());
  if (file.size() > limits::kSnapshotBytesMax) {
    call->ReplyError(Status::TooLarge(fmt::format(
        "snapshot of {} bytes is larger than the {} bytes a restore accepts (docs/limits.md)",
        file.size(), limits::kSnapshotBytesMax)));
    return;
  }
  HttpResponse response = HttpResponse::Text(200, std::move(file));
  response.content_type = "application/octet-stream";
  SetMeta(&response, store.applied_index());
  log::Info("http", "snapshot saved",
            {log::Num("index", static_cast<unsigned long long>(store.applied_index().value())),
             log::Num("bytes", static_cast<unsigned long long>(response.body.size()))});
  call->Reply(std::move(response));
}

// What the check of a restored file hands back to the loop: the state's
// bytes twice (one for the command, one for the decoder to match it with)
// and the state decoded from them, so the loop copies nothing.
struct CheckedSnapshot {
  Status status;
  state::BackupInfo info;
  std::string command_bytes;
  std::string decoder_bytes;
  std::optional<state::Store> decoded;
};

class SnapshotChecker : public OffLoopWork<CheckedSnapshot> {
 public:
  using OffLoopWork::OffLoopWork;
};

namespace {

CheckedSnapshot CheckSnapshotFile(const std::string& file) {
  CheckedSnapshot checked;
  Result<state::OpenedBackup> opened = state::OpenBackup(file);
  if (!opened.ok()) {
    checked.status = opened.status();
    return checked;
  }
  checked.info = opened->info;
  checked.command_bytes = std::string(opened->state);
  checked.decoder_bytes = checked.command_bytes;
  checked.decoded.emplace(std::move(opened->store));
  return checked;
}

}  // namespace

// The whole file is checked (header, SHA-256, the state decoded and
// validated) before anything is proposed: a bad file changes nothing on any
// server. The check runs off the loop thread (decision 0046), one file at a
// time per server. The state then travels as one raft entry
// (state::RestoreState) or, past 1 MiB, as chunks swapped in by a last entry
// (decision 0050); the state decoded here is the one this server applies.
void Api::SnapshotRestore(const CallPtr& call) {
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  if (snapshot_checker_ == nullptr) snapshot_checker_ = std::make_shared<SnapshotChecker>(io_);
  if (snapshot_checker_->busy()) {
    call->ReplyError(Status::Conflict(
        "another snapshot restore is being checked on this server; try again when it is done"));
    return;
  }
  auto file = std::make_shared<std::string>(std::move(call->request->body));
  snapshot_checker_->Run(
      [file] { return CheckSnapshotFile(*file); },
      [this, call](CheckedSnapshot checked) { ProposeRestore(call, std::move(checked)); });
}

void Api::ProposeRestore(const CallPtr& call, CheckedSnapshot checked) {
  if (!checked.status.ok()) {
    log::Warn("http", "snapshot restore refused", {{"why", std::string(checked.status.message())}});
    call->ReplyError(checked.status);
    return;
  }
  server_.OfferDecodedRestore(std::move(checked.decoder_bytes), std::move(*checked.decoded));
  const state::BackupInfo info = checked.info;
  auto restored = [this, call, info](const state::ApplyResult& applied) {
    if (!applied.status.ok()) {
      call->ReplyError(applied.status);
      return;
    }
    log::Info("http", "snapshot restored",
              {log::Num("snapshot_index", static_cast<unsigned long long>(info.index)),
               log::Num("index",
                        static_cast<unsigned long long>(server_.store().applied_index().value())),
               {"sha256", info.sha256}});
    HttpResponse ok = HttpResponse::Text(200, "");
    ok.content_type.clear();
    SetMeta(&ok, server_.store().applied_index());
    call->Reply(std::move(ok));
  };
  if (checked.command_bytes.size() <= limits::kRestoreChunkBytesMax) {
    ProposeThen(call, state::RestoreState{std::move(checked.command_bytes)}, std::move(restored));
    return;
  }
  // Larger: in chunks, one raft entry each, then the swap (decision 0050).
  std::uint64_t id = 0;
  std::random_device random;
  while (id == 0) id = (std::uint64_t{random()} << 32) | random();
  ProposeRestoreChunk(call, std::make_shared<const std::string>(std::move(checked.command_bytes)),
                      id, 0, std::move(restored));
}

// One chunk after the other, each proposed once the one before applied: a
// restore shares the log with other writes, a chunk per round.
void Api::ProposeRestoreChunk(const CallPtr& call, std::shared_ptr<const std::string> state,
                              std::uint64_t id, std::size_t offset,
                              std::function<void(const state::ApplyResult&)> restored) {
  const std::size_t total = state->size();
  if (offset == total) {
    ProposeThen(call, state::RestoreStaged{id, total}, std::move(restored));
    return;
  }
  const std::size_t bytes = std::min(limits::kRestoreChunkBytesMax, total - offset);
  state::RestoreChunk chunk{id, offset, total, state->substr(offset, bytes)};
  ProposeThen(call, std::move(chunk),
              [this, call, state, id, next = offset + bytes,
               restored = std::move(restored)](const state::ApplyResult& applied) mutable {
                if (!applied.status.ok()) {
                  call->ReplyError(applied.status);
                  return;
                }
                ProposeRestoreChunk(call, std::move(state), id, next, std::move(restored));
              });
}

}  // namespace tenure::http
