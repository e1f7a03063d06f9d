#include "cli/malloc_huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace tenure::cli {

namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb=1";

bool TransparentHugePagesOn() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  return line.find("[always]") != std::string::npos || line.find("[madvise]") != std::string::npos;
}

}  // namespace

void ReexecWithMallocHugePages(char** argv) {
  const char* opt = std::getenv("TENURE_MALLOC_HUGETLB");
  if (opt != nullptr && std::string(opt) == "0") return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::string value = tunables != nullptr ? tunables : "";
  if (value.find("glibc.malloc.hugetlb") != std::string::npos) return;  // set: ours or theirs
  if (!TransparentHugePagesOn()) return;
  value = value.empty() ? kTunable : value + ":" + kTunable;
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc, say): carry on as we are, without it.
  unsetenv("GLIBC_TUNABLES");
  if (tunables != nullptr) setenv("GLIBC_TUNABLES", tunables, 1);
}

}  // namespace tenure::cli
