// The lock a server holds on its raft dir while it runs, so that neither a
// second server nor `tenure recover` works on the files under it: libraft
// does not lock its directory, and two writers would interleave segments.
// An flock on <raft dir>/tenure.lock dies with the process (kill -9 too).
#pragma once

#include <string>

#include "common/status.h"

namespace tenure::raft::disk {

class DirLock {
 public:
  DirLock() = default;
  ~DirLock() { Release(); }
  DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  // Unavailable ("... is in use by another server") when someone holds it;
  // IoError when the file cannot be opened. Creates the lock file.
  static Result<DirLock> Take(const std::string& raft_dir);

  bool held() const { return fd_ >= 0; }
  void Release();

 private:
  int fd_ = -1;
};

}  // namespace tenure::raft::disk
