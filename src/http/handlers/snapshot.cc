// GET /v1/snapshot and PUT /v1/snapshot: Consul's paths for saving and
// restoring the whole state (docs/snapshots.md, decision 0024). The file is
// tenure's own (state/backup_file.h), not Consul's archive.
#include <fmt/core.h>

#include "common/limits.h"
#include "common/log.h"
#include "http/api.h"
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

// The whole file is checked here (header, SHA-256, the state decoded and
// validated) before anything is proposed: a bad file changes nothing on any
// server. The state then travels as one raft entry (state::RestoreState).
void Api::SnapshotRestore(const CallPtr& call) {
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  Result<state::OpenedBackup> opened = state::OpenBackup(call->request->body);
  if (!opened.ok()) {
    log::Warn("http", "snapshot restore refused",
              {{"why", std::string(opened.status().message())}});
    call->ReplyError(opened.status());
    return;
  }
  const state::BackupInfo info = opened->info;
  ProposeThen(call, state::RestoreState{std::string(opened->state)},
              [this, call, info](const state::ApplyResult& applied) {
                if (!applied.status.ok()) {
                  call->ReplyError(applied.status);
                  return;
                }
                log::Info("http", "snapshot restored",
                          {log::Num("snapshot_index", static_cast<unsigned long long>(info.index)),
                           log::Num("index", static_cast<unsigned long long>(
                                                 server_.store().applied_index().value())),
                           {"sha256", info.sha256}});
                HttpResponse ok = HttpResponse::Text(200, "");
                ok.content_type.clear();
                SetMeta(&ok, server_.store().applied_index());
                call->Reply(std::move(ok));
              });
}

}  // namespace tenure::http
