// Writes snapshot files that break one limit each (unit/state/forged_states.h),
// with the real encoder, for the integration test that restores them through
// a real server (tests/integration/test_snapshot_limits.py):
//   OUT_DIR/valid.snap            the state they start from (restores)
//   OUT_DIR/<case>.snap           that state with one field past a limit
//   OUT_DIR/<case>.refusal        words its refusal must contain
// Usage: forge_snapshots OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "state/backup_file.h"
#include "unit/state/forged_states.h"

namespace {

void Write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tenure::state;
  if (argc != 2) {
    std::fprintf(stderr, "usage: forge_snapshots OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  std::filesystem::create_directories(root);
  const tenure::UnixMs saved_at = testutil::kForgedWall + 1000;
  Write(root / "valid.snap", EncodeBackup(testutil::ForgedBase(), 3, saved_at));
  int n = 0;
  for (const testutil::Forged& forged : testutil::ForgedCases()) {
    Write(root / (forged.name + ".snap"), EncodeBackup(testutil::ForgedState(forged), 3, saved_at));
    Write(root / (forged.name + ".refusal"), forged.refusal);
    ++n;
  }
  std::printf("wrote valid.snap and %d forged files under %s\n", n, argv[1]);
  return 0;
}
