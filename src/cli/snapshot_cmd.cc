// tenure snapshot save|restore|inspect FILE: backups of the whole state over
// GET and PUT /v1/snapshot (docs/snapshots.md, decision 0024). The file is
// checked whole (state/backup_file.h) after a save, before a restore sends
// anything, and by inspect.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "common/limits.h"
#include "common/rfc3339.h"
#include "state/backup_file.h"

namespace tenure::cli {
namespace {

constexpr char kSnapshotUsage[] =
    "Usage: tenure snapshot save FILE [options]\n"
    "       tenure snapshot restore FILE [options]\n"
    "       tenure snapshot inspect FILE\n"
    "\n"
    "  save writes the cluster's whole state, as of one index, to FILE (replaced\n"
    "  atomically if it exists; mode 0600: it holds every ACL secret) and checks it.\n"
    "  -stale lets any server answer, not only the leader.\n"
    "  restore checks FILE, then replaces the cluster's state with it: every key,\n"
    "  session, lock and ACL token. Indexes and fencing tokens never go backwards.\n"
    "  inspect checks FILE and prints its index, term, size, counts and SHA-256.\n"
    "  save and restore need a token with acl:write (ACLs on) or the servers'\n"
    "  operator token (ACLs off). docs/snapshots.md.\n"
    "\n";

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("open " + path + ": " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return Status::IoError("read " + path + ": cannot tell its size");
  if (static_cast<std::uint64_t>(size) > limits::kSnapshotBytesMax) {
    return Status::InvalidArgument(path + " holds " + std::to_string(size) +
                                   " bytes, more than the " +
                                   std::to_string(limits::kSnapshotBytesMax) +
                                   " bytes of the largest snapshot (docs/limits.md)");
  }
  in.seekg(0);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), size)) return Status::IoError("read " + path + ": short read");
  return bytes;
}

// Writes to a temporary file beside `path`, syncs it, and renames it over
// `path`: a reader sees the old file or the whole new one, never a part.
Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("create " + temp + ": " + std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status failed = Status::IoError("write " + temp + ": " + std::strerror(errno));
      ::close(fd);
      ::unlink(temp.c_str());
      return failed;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Status failed = Status::IoError("sync " + temp + ": " + std::strerror(errno));
    ::unlink(temp.c_str());
    return failed;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status failed = Status::IoError("rename " + temp + " to " + path + ": " + std::strerror(errno));
    ::unlink(temp.c_str());
    return failed;
  }
  return Status::Ok();
}

// The one positional argument, FILE.
std::optional<std::string> OneFile(const Flags& flags, std::string_view command) {
  if (flags.positional().size() != 1 || flags.positional()[0].empty()) {
    PrintErr("tenure snapshot " + std::string(command) + ": give exactly one FILE\n\n" +
             kSnapshotUsage);
    return std::nullopt;
  }
  return flags.positional()[0];
}

int Save(const Args& args) {
  HttpFlags http;
  bool stale = false;
  Flags flags("snapshot save");
  flags.Bool("stale", &stale, "let any server answer, not only the leader");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kSnapshotUsage, 1)) return *code;
  std::optional<std::string> file = OneFile(flags, "save");
  if (!file) return 1;
  auto response = http.MakeClient()->Request("GET", stale ? "/v1/snapshot?stale" : "/v1/snapshot");
  if (!response.ok()) {
    PrintErr("Error saving snapshot: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error saving snapshot: " + UnexpectedResponse(*response));
    return 1;
  }
  Result<state::OpenedBackup> opened = state::OpenBackup(response->body);
  if (!opened.ok()) {
    PrintErr("Error verifying snapshot: " + std::string(opened.status().message()));
    return 1;
  }
  if (Status written = WriteFileAtomically(*file, response->body); !written.ok()) {
    PrintErr("Error writing snapshot: " + std::string(written.message()));
    return 1;
  }
  PrintOut("Saved and verified snapshot to index " + std::to_string(opened->info.index));
  return 0;
}

int Restore(const Args& args) {
  HttpFlags http;
  Flags flags("snapshot restore");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kSnapshotUsage, 1)) return *code;
  std::optional<std::string> file = OneFile(flags, "restore");
  if (!file) return 1;
  Result<std::string> bytes = ReadFile(*file);
  if (!bytes.ok()) {
    PrintErr("Error reading snapshot: " + std::string(bytes.status().message()));
    return 1;
  }
  // Checked here too, so that a bad file is named before anything is sent.
  if (Result<state::OpenedBackup> opened = state::OpenBackup(*bytes); !opened.ok()) {
    PrintErr("Error restoring snapshot: " + std::string(opened.status().message()));
    return 1;
  }
  // A large state takes a while to send, replicate and apply.
  constexpr std::int64_t kRestoreTimeoutMs = 120'000;
  auto response = http.MakeClient()->Request("PUT", "/v1/snapshot", *bytes, kRestoreTimeoutMs);
  if (!response.ok()) {
    PrintErr("Error restoring snapshot: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error restoring snapshot: " + UnexpectedResponse(*response));
    return 1;
  }
  PrintOut("Restored snapshot");
  return 0;
}

std::string Row(std::string_view name, const std::string& value) {
  std::string line = " " + std::string(name);
  line.resize(16, ' ');
  return line + value;
}

int Inspect(const Args& args) {
  Flags flags("snapshot inspect");
  if (auto code = ParseFlags(&flags, args, kSnapshotUsage, 1)) return *code;
  std::optional<std::string> file = OneFile(flags, "inspect");
  if (!file) return 1;
  Result<std::string> bytes = ReadFile(*file);
  if (!bytes.ok()) {
    PrintErr("Error reading snapshot: " + std::string(bytes.status().message()));
    return 1;
  }
  Result<state::OpenedBackup> opened = state::OpenBackup(*bytes);
  if (!opened.ok()) {
    PrintErr("Error inspecting snapshot: " + std::string(opened.status().message()));
    return 1;
  }
  const state::BackupInfo& info = opened->info;
  auto n = [](std::uint64_t v) { return std::to_string(v); };
  PrintOut(Row("Index", n(info.index)));
  PrintOut(Row("Term", n(info.term)));
  PrintOut(Row("Saved", FormatRfc3339(UnixMs(info.saved_at_ms))));
  PrintOut(Row("Size", n(bytes->size())));
  PrintOut(Row("State bytes", n(info.state_bytes)));
  PrintOut(Row("Version", n(info.version)));
  PrintOut(Row("SHA-256", info.sha256));
  PrintOut(Row("Keys", n(info.keys)));
  PrintOut(Row("Tombstones", n(info.tombstones)));
  PrintOut(Row("Sessions", n(info.sessions)));
  PrintOut(Row("Locks", n(info.locks)));
  PrintOut(Row("Lock-delays", n(info.lock_delays)));
  PrintOut(Row("ACL tokens", n(info.acl_tokens)));
  PrintOut(Row("ACL policies", n(info.acl_policies)));
  return 0;
}

}  // namespace

int SnapshotCommand(const Args& args) {
  return DispatchSubcommand("snapshot", kSnapshotUsage, args,
                            {{"save", &Save}, {"restore", &Restore}, {"inspect", &Inspect}}, 1);
}

}  // namespace tenure::cli
