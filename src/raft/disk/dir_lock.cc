#include "raft/disk/dir_lock.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tenure::raft::disk {

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Result<DirLock> DirLock::Take(const std::string& raft_dir) {
  std::string path = raft_dir + "/tenure.lock";
  DirLock lock;
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) {
    return Status::IoError(fmt::format("raft: open {}: {}", path, std::strerror(errno)));
  }
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return Status::Unavailable(
          fmt::format("raft: data dir {} is in use by another server", raft_dir));
    }
    return Status::IoError(fmt::format("raft: lock {}: {}", path, std::strerror(err)));
  }
  return lock;
}

void DirLock::Release() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
  fd_ = -1;
}

}  // namespace tenure::raft::disk
