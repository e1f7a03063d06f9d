// Writes a snapshot file (state/backup_file.h) of N keys for the loop-stall
// benchmark (bench/loop_stall.py): keys PREFIX000000000.. with values of
// VALUE_BYTES bytes, built by applying real KvSet commands (up to 128 per
// transaction's worth of index) to a Store and encoding it with the real
// encoder. With --time it also reports how long this machine takes to open
// (check and decode) the file it wrote, the work a restore does.
// Usage: make_backup OUT N VALUE_BYTES PREFIX [--time]
//        make_backup --open FILE   (times OpenBackup of FILE)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "state/backup_file.h"
#include "state/command.h"
#include "state/store.h"

namespace {

// Opens `file` as PUT /v1/snapshot does and prints how long it took.
bool TimeOpen(const std::string& file) {
  const auto start = std::chrono::steady_clock::now();
  const bool ok = tenure::state::OpenBackup(file).ok();
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("OpenBackup: %s in %.0f ms\n", ok ? "ok" : "refused", ms);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tenure;
  using namespace tenure::state;
  if (argc == 3 && std::string(argv[1]) == "--open") {
    std::ifstream in(argv[2], std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return TimeOpen(file) ? 0 : 1;
  }
  if (argc < 5) {
    std::fprintf(stderr, "usage: make_backup OUT N VALUE_BYTES PREFIX [--time]\n");
    return 2;
  }
  const std::string out = argv[1];
  const long n = std::atol(argv[2]);
  const long value_bytes = std::atol(argv[3]);
  const std::string prefix = argv[4];
  const bool time = argc > 5 && std::string(argv[5]) == "--time";
  if (n <= 0 || value_bytes < 0) {
    std::fprintf(stderr, "make_backup: N must be > 0 and VALUE_BYTES >= 0\n");
    return 2;
  }
  Store store;
  std::uint64_t index = 1;
  char name[32];
  for (long i = 0; i < n; ++i) {
    Command command;
    command.now_ms = ClusterMs(1000);
    command.wall_ms = UnixMs(1'700'000'000'000);
    std::snprintf(name, sizeof name, "%09ld", i);
    command.body = KvSet{prefix + name, std::string(static_cast<std::size_t>(value_bytes), 'v'), 0};
    store.Apply(command, LogIndex(index++));
  }
  const std::string file = EncodeBackup(store, 1, UnixMs(1'700'000'000'000));
  std::ofstream(out, std::ios::binary) << file;
  std::printf("wrote %s: %ld keys, %zu bytes\n", out.c_str(), n, file.size());
  if (time) (void)TimeOpen(file);
  return 0;
}
