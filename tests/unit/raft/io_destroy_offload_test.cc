// io_destroy off the calling thread (raft/io_destroy_offload.h), with real
// kernel AIO contexts: the binary's `syscall` is the one every library
// binds to, other numbers behave as the C library's, and a queued context
// really is destroyed by the reaper. That the server binary's libraft calls
// come here is checked end to end by test_durability.py (the server's
// tenure_raft_aio_contexts_offloaded_total moves past a snapshot).
#include "raft/io_destroy_offload.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
}

TEST(IoDestroyOffloadTest, AllSixArgumentsPassThrough) {
  // mmap's sixth argument is the file offset: the second page of a memfd
  // holds a mark, the first zeros. A dropped sixth argument maps the first.
  const int fd = memfd_create("io-destroy-offload-test", 0);
  ASSERT_GE(fd, 0);
  const long page = sysconf(_SC_PAGESIZE);
  ASSERT_EQ(ftruncate(fd, 2 * page), 0);
  const char mark[] = "sixth";
  ASSERT_EQ(pwrite(fd, mark, sizeof mark, page), static_cast<ssize_t>(sizeof mark));
  const long addr = syscall(SYS_mmap, 0L, page, static_cast<long>(PROT_READ),
                            static_cast<long>(MAP_SHARED), static_cast<long>(fd), page);
  ASSERT_NE(addr, -1L) << "errno " << errno;
  EXPECT_STREQ(reinterpret_cast<const char*>(addr), "sixth");
  munmap(reinterpret_cast<void*>(addr), page);
  close(fd);
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

// A forked child has no reaper thread (fork copies only its caller) and
// may not wait for one: it destroys its contexts itself, at once.
TEST(IoDestroyOffloadTest, AForkedChildDestroysItsOwnContexts) {
  StartIoDestroyReaper();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    aio_context_t context = 0;
    if (syscall(SYS_io_setup, 1, &context) != 0) _exit(2);
    if (syscall(SYS_io_destroy, context) != 0) _exit(3);
    struct io_event event {};
    struct timespec zero {};
    const long got = RealSyscall(SYS_io_getevents, static_cast<long>(context), 0, 1,
                                 reinterpret_cast<long>(&event), reinterpret_cast<long>(&zero));
    _exit(got == -1 && errno == EINVAL ? 0 : 5);  // destroyed: gone
  }
  int status = 0;
  pid_t done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the child hung";
  }
  ASSERT_EQ(done, pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: io_setup, 3: io_destroy failed, 5: the context outlived it";
}

}  // namespace
}  // namespace tenure::raft
