#include "raft/segment_zero_fill.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

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
// size is 4 KiB or more), and segments are whole multiples of it.
constexpr off_t kAlignment = 4096;
constexpr off_t kChunkBytes = 1 << 20;

// Zeros over the part of [offset, offset + length) past the file's end
// before the allocation (what was there stays, as posix_fallocate keeps
// it), written around the page cache: a cached page in a range makes a
// later RWF_NOWAIT direct write of it answer EAGAIN, the very fallback
// this avoids, and libraft opens a segment without O_DIRECT when it makes
// it. Then one fdatasync, so the extents are written on disk before
// libraft's first O_DSYNC write needs them. Best effort: any failure leaves
// the range as allocated, which is what posix_fallocate promised.
void WriteZeros(int fd, off_t offset, off_t length, off_t old_size) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY || (flags & O_APPEND) != 0) return;
  const auto align_down = [](off_t at) { return at - at % kAlignment; };
  const auto align_up = [&](off_t at) { return align_down(at + kAlignment - 1); };
  // Whole blocks only: a partial block past the old end keeps its allocation.
  const off_t begin = align_up(std::max(offset, old_size));
  const off_t end = align_down(offset + length);
  if (begin >= end) return;
  // A second open file description of the same file, direct.
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  const int direct = ::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (direct < 0) return;  // no O_DIRECT here (tmpfs): nothing to gain
  void* zeros = nullptr;
  if (::posix_memalign(&zeros, kAlignment, kChunkBytes) == 0) {
    std::memset(zeros, 0, static_cast<std::size_t>(kChunkBytes));
    for (off_t at = begin; at < end;) {
      const auto want = static_cast<std::size_t>(std::min(end - at, kChunkBytes));
      const ssize_t n = ::pwrite(direct, zeros, want, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || n % kAlignment != 0) break;
      at += n;
    }
    std::free(zeros);
    ::fdatasync(direct);
  }
  ::close(direct);
}

}  // namespace

void EnableSegmentZeroFill(bool on) { zero_fill.store(on, std::memory_order_release); }

}  // namespace tenure::raft

// The C library's function, then the zeros (see the header).
extern "C" int posix_fallocate(int fd, off_t offset, off_t length) {
  if (!tenure::raft::zero_fill.load(std::memory_order_acquire)) {
    return tenure::raft::LibcFallocate()(fd, offset, length);
  }
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0;
  const int rv = tenure::raft::LibcFallocate()(fd, offset, length);
  if (rv == 0 && sized) tenure::raft::WriteZeros(fd, offset, length, before.st_size);
  return rv;
}
