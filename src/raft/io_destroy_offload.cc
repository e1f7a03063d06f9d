#include "raft/io_destroy_offload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <deque>
#include <mutex>
#include <thread>

#include "common/assert.h"

namespace tenure::raft {
namespace {

using SyscallFn = long (*)(long, ...);

// No function-local static here: a thread waiting for another's first
// initialisation would wait through libstdc++'s guard, which calls
// syscall(SYS_futex), i.e. this file again, forever. An atomic needs no
// guard; threads racing to fill it store the same address.
std::atomic<SyscallFn> libc_syscall{nullptr};

SyscallFn LibcSyscall() {
  SyscallFn fn = libc_syscall.load(std::memory_order_acquire);
  if (fn == nullptr) {
    // RTLD_NEXT: the definition after this binary's, i.e. the C library's.
    fn = reinterpret_cast<SyscallFn>(dlsym(RTLD_NEXT, "syscall"));
    TENURE_ASSERT(fn != nullptr);
    libc_syscall.store(fn, std::memory_order_release);
  }
  return fn;
}

// Resolved before main, so that threads rarely race to do it.
[[maybe_unused]] const bool resolved_at_start = LibcSyscall() != nullptr;

// Never destroyed: the detached reaper may still use it during exit.
struct Reaper {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<long> contexts;
  std::atomic<bool> started{false};
  std::atomic<std::size_t> reaped{0};

  void Run() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return !contexts.empty(); });
      const long context = contexts.front();
      contexts.pop_front();
      lock.unlock();
      LibcSyscall()(SYS_io_destroy, context);
      reaped.fetch_add(1, std::memory_order_release);
      lock.lock();
    }
  }
};

Reaper& TheReaper() {
  static Reaper* reaper = new Reaper;
  return *reaper;
}

// fork(2) copies only the calling thread: a child (a test's forked writer,
// anything a server forks) has no reaper and could inherit its mutex held.
// The fork waits out the reaper's short critical section; the child, whose
// address space holds none of the parent's AIO contexts, forgets the queue
// and makes io_destroy itself, as the C library would.
void LockReaperForFork() { TheReaper().mutex.lock(); }
void UnlockReaperInParent() { TheReaper().mutex.unlock(); }
void ResetReaperInChild() {
  Reaper& reaper = TheReaper();
  reaper.contexts.clear();
  reaper.started.store(false, std::memory_order_release);
  reaper.mutex.unlock();
}

}  // namespace

void StartIoDestroyReaper() {
  Reaper& reaper = TheReaper();
  static std::once_flag once;
  std::call_once(once, [&reaper] {
    const int registered =
        pthread_atfork(&LockReaperForFork, &UnlockReaperInParent, &ResetReaperInChild);
    TENURE_ASSERT(registered == 0);
    std::thread([&reaper] {
      pthread_setname_np(pthread_self(), "tenure-aioreap");
      reaper.Run();
    }).detach();
    reaper.started.store(true, std::memory_order_release);
  });
}

long RealSyscall(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
  return LibcSyscall()(number, a1, a2, a3, a4, a5, a6);
}

std::size_t IoDestroysReaped() { return TheReaper().reaped.load(std::memory_order_acquire); }

}  // namespace tenure::raft

// glibc's declaration is noexcept in C++ (__THROW); the definition matches.
// Not instrumented by AddressSanitizer: the sixth argument is read from the
// caller's stack whether it passed one or not, as glibc's own syscall reads
// its registers, and a caller that passed fewer has a redzone there.
extern "C" __attribute__((no_sanitize("address"))) long syscall(long number, ...) noexcept {
  // Six arguments, as the C library's own syscall passes on.
  va_list args;
  va_start(args, number);
  long a[6];
  for (long& arg : a) arg = va_arg(args, long);
  va_end(args);
  if (number == SYS_io_destroy) {
    auto& reaper = tenure::raft::TheReaper();
    if (reaper.started.load(std::memory_order_acquire)) {
      {
        std::lock_guard lock(reaper.mutex);
        reaper.contexts.push_back(a[0]);
      }
      reaper.wake.notify_one();
      return 0;
    }
  }
  return tenure::raft::LibcSyscall()(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
