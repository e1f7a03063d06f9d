#include "raft/segment_zero_fill.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/assert.h"

namespace tenure::raft {
namespace {

using FallocateFn = int (*)(int, off_t, off_t);

// An atomic rather than a function-local static, as in io_destroy_offload.cc:
// threads racing to fill it store the same address.
std::atomic<FallocateFn> libc_fallocate{nullptr};
std::atomic<bool> zero_fill{false};

FallocateFn LibcFallocate() {
  FallocateFn fn = libc_fallocate.load(std::memory_order_acquire);
  if (fn == nullptr) {
    // RTLD_NEXT: the definition after this binary's, i.e. the C library's.
    fn = reinterpret_cast<FallocateFn>(dlsym(RTLD_NEXT, "posix_fallocate"));
    TENURE_ASSERT(fn != nullptr);
    libc_fallocate.store(fn, std::memory_order_release);
  }
  return fn;
}

// O_DIRECT wants the buffer, offset and length aligned to the device's
// logical block: 4 KiB covers every device libraft accepts (its own block
// size is 4 KiB or more).
constexpr std::size_t kAlignment = 4096;
constexpr std::size_t kChunkBytes = 1 << 20;

// Zeros over [offset, offset + length): 0, or an error number as
// posix_fallocate answers. A range O_DIRECT cannot write as asked, or a
// descriptor not open for writing, is left as allocated (0).
int WriteZeros(int fd, off_t offset, off_t length) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) return 0;
  if ((flags & O_DIRECT) != 0 && (static_cast<std::size_t>(offset) % kAlignment != 0 ||
                                  static_cast<std::size_t>(length) % kAlignment != 0)) {
    return 0;
  }
  void* zeros = nullptr;
  if (::posix_memalign(&zeros, kAlignment, kChunkBytes) != 0) return ENOMEM;
  std::memset(zeros, 0, kChunkBytes);
  int result = 0;
  const off_t end = offset + length;
  for (off_t at = offset; at < end;) {
    const auto want = static_cast<std::size_t>(std::min<off_t>(end - at, off_t{kChunkBytes}));
    const ssize_t n = ::pwrite(fd, zeros, want, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result = n < 0 ? errno : EIO;
      break;
    }
    at += n;
  }
  std::free(zeros);
  return result;
}

}  // namespace

void EnableSegmentZeroFill(bool on) { zero_fill.store(on, std::memory_order_release); }

}  // namespace tenure::raft

// The C library's function, then the zeros (see the header).
extern "C" int posix_fallocate(int fd, off_t offset, off_t length) {
  const int rv = tenure::raft::LibcFallocate()(fd, offset, length);
  if (rv != 0 || !tenure::raft::zero_fill.load(std::memory_order_acquire)) return rv;
  return tenure::raft::WriteZeros(fd, offset, length);
}
