// io_destroy off the calling thread (raft/io_destroy_offload.h), with real
// kernel AIO contexts: the binary's `syscall` is the one every library
// binds to, other numbers behave as the C library's, and a queued context
// really is destroyed by the reaper.
#include "raft/io_destroy_offload.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace tenure::raft {
namespace {

// A context the kernel still knows answers io_getevents with 0 events; a
// destroyed one with EINVAL.
bool ContextAlive(aio_context_t context) {
  struct io_event event {};
  struct timespec zero {};
  errno = 0;
  const long got = RealSyscall(SYS_io_getevents, static_cast<long>(context), 0, 1,
                               reinterpret_cast<long>(&event), reinterpret_cast<long>(&zero));
  if (got == 0) return true;
  EXPECT_EQ(got, -1);
  EXPECT_EQ(errno, EINVAL);
  return false;
}

TEST(IoDestroyOffloadTest, LibrariesBindToThisBinarysSyscall) {
  // libraft.so imports syscall; the first definition in the global scope
  // is the one it gets.
  void* global = dlsym(RTLD_DEFAULT, "syscall");
  void* next = dlsym(RTLD_NEXT, "syscall");
  ASSERT_NE(global, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(global, next) << "the C library's syscall would be used: nothing is offloaded";
}

TEST(IoDestroyOffloadTest, OtherNumbersAreTheCLibrarys) {
  EXPECT_EQ(syscall(SYS_getpid), static_cast<long>(getpid()));
  errno = 0;
  EXPECT_EQ(syscall(SYS_close, -1), -1);
  EXPECT_EQ(errno, EBADF);
  // Six arguments pass through: an invalid io_getevents names its context.
  struct timespec zero {};
  errno = 0;
  EXPECT_EQ(syscall(SYS_io_getevents, 0L, 0L, 1L, nullptr, &zero), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(IoDestroyOffloadTest, AQueuedContextIsDestroyedByTheReaper) {
  StartIoDestroyReaper();
  StartIoDestroyReaper();  // idempotent
  aio_context_t context = 0;
  ASSERT_EQ(syscall(SYS_io_setup, 1, &context), 0) << "errno " << errno;
  ASSERT_TRUE(ContextAlive(context));
  const std::size_t reaped_before = IoDestroysReaped();
  EXPECT_EQ(syscall(SYS_io_destroy, context), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (IoDestroysReaped() == reaped_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(IoDestroysReaped(), reaped_before) << "the reaper never made the call";
  EXPECT_FALSE(ContextAlive(context));
}

}  // namespace
}  // namespace tenure::raft
