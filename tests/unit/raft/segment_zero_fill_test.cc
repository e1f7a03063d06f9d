// Log segments written with zeros when allocated (raft/segment_zero_fill.h,
// decision 0059), on the file system the tests run on: the binary's
// posix_fallocate is the one libraries bind to; a file made as libraft
// makes a segment reads as zeros, has no extent left "unwritten" (where the
// file system tells; without the fill it has) and no page in the cache (a
// direct RWF_NOWAIT write of a cached page answers EAGAIN); what was in the
// file stays; failures are the C library's.
#include "raft/segment_zero_fill.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tenure::raft {
namespace {

constexpr off_t kSegmentBytes = 2 << 20;

// How many of the file's extents are unwritten (allocated, never written),
// or nullopt where the file system does not say (no FIEMAP).
std::optional<int> UnwrittenExtents(int fd) {
  constexpr unsigned kExtents = 64;
  std::vector<char> buffer(sizeof(fiemap) + kExtents * sizeof(fiemap_extent));
  auto* map = reinterpret_cast<fiemap*>(buffer.data());
  map->fm_start = 0;
  map->fm_length = FIEMAP_MAX_OFFSET;
  map->fm_flags = FIEMAP_FLAG_SYNC;
  map->fm_extent_count = kExtents;
  if (::ioctl(fd, FS_IOC_FIEMAP, map) != 0) return std::nullopt;
  int unwritten = 0;
  for (unsigned i = 0; i < map->fm_mapped_extents; ++i) {
    if ((map->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) != 0) ++unwritten;
  }
  return unwritten;
}

class SegmentZeroFillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tenure-zero-fill-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    EnableSegmentZeroFill(false);
    for (int fd : fds_) ::close(fd);
    std::filesystem::remove_all(dir_);
  }
  // Opened as libraft 0.15 makes a segment (UvFsAllocateFile): no O_DIRECT.
  int MakeLikeLibraft(const std::string& name, int extra = 0) {
    const int fd =
        ::open((dir_ / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DSYNC | extra, 0600);
    EXPECT_GE(fd, 0);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  std::string Read(const std::string& name) {
    std::string bytes(static_cast<std::size_t>(std::filesystem::file_size(dir_ / name)), 'x');
    const int fd = ::open((dir_ / name).c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return bytes;
  }
  // A 4 KiB direct write with RWF_NOWAIT into the middle of the file, as
  // libraft's writer submits them: its byte count, or -errno; nullopt when
  // O_DIRECT or RWF_NOWAIT is not available here.
  std::optional<ssize_t> NowaitDirectWrite(const std::string& name) {
    const int fd = ::open((dir_ / name).c_str(), O_WRONLY | O_DIRECT | O_DSYNC);
    if (fd < 0) return std::nullopt;
    void* block = nullptr;
    EXPECT_EQ(::posix_memalign(&block, 4096, 4096), 0);
    std::memset(block, 'e', 4096);
    iovec iov{block, 4096};
    const ssize_t n = ::pwritev2(fd, &iov, 1, kSegmentBytes / 2, RWF_NOWAIT);
    const int error = errno;
    std::free(block);
    ::close(fd);
    if (n < 0 && (error == EOPNOTSUPP || error == EINVAL)) return std::nullopt;
    return n < 0 ? -error : n;
  }

  std::filesystem::path dir_;
  std::vector<int> fds_;
};

TEST_F(SegmentZeroFillTest, LibrariesBindToThisBinarysPosixFallocate) {
  void* global = dlsym(RTLD_DEFAULT, "posix_fallocate");
  void* next = dlsym(RTLD_NEXT, "posix_fallocate");
  ASSERT_NE(global, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(global, next) << "libraft would get the C library's: segments stay unwritten";
}

TEST_F(SegmentZeroFillTest, ASegmentIsWrittenAndTakesANowaitWrite) {
  EnableSegmentZeroFill();
  const int fd = MakeLikeLibraft("open-1");
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  if (const std::optional<int> unwritten = UnwrittenExtents(fd)) {
    EXPECT_EQ(*unwritten, 0);
  }
  // Before any buffered read here: a page this test cached would refuse it.
  const std::optional<ssize_t> wrote = NowaitDirectWrite("open-1");
  std::string expected(kSegmentBytes, '\0');
  if (wrote && *wrote == 4096) expected.replace(kSegmentBytes / 2, 4096, 4096, 'e');
  EXPECT_EQ(Read("open-1"), expected);
  if (!wrote) GTEST_SKIP() << "no O_DIRECT or RWF_NOWAIT here: nothing to compare";
  EXPECT_EQ(*wrote, 4096) << "a cached or unwritten block refused the NOWAIT write";
}

TEST_F(SegmentZeroFillTest, OffTheExtentsStayUnwritten) {
  // What the writes meet without the fill where the file system keeps
  // unwritten extents (ext4, xfs): this makes the extent check above mean
  // something. (A synchronous NOWAIT write takes such a block here; libraft's
  // kernel-AIO one was refused, decision 0059.)
  const int fd = MakeLikeLibraft("open-2");
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  const std::optional<int> unwritten = UnwrittenExtents(fd);
  if (!unwritten || *unwritten == 0) {
    GTEST_SKIP() << "this file system keeps no unwritten extents: nothing to compare";
  }
  EXPECT_GT(*unwritten, 0);
}

TEST_F(SegmentZeroFillTest, WhatWasInTheFileStays) {
  EnableSegmentZeroFill();
  const int fd = MakeLikeLibraft("kept");
  const std::string head(5000, 'h');  // past one block: the partial block is kept too
  ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  const std::string bytes = Read("kept");
  ASSERT_EQ(bytes.size(), static_cast<std::size_t>(kSegmentBytes));
  EXPECT_EQ(bytes.substr(0, head.size()), head);
  EXPECT_EQ(bytes.find_first_not_of('\0', head.size()), std::string::npos);
}

TEST_F(SegmentZeroFillTest, AnAppendingDescriptorIsOnlyAllocated) {
  EnableSegmentZeroFill();
  const int fd = MakeLikeLibraft("append", O_APPEND);
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  EXPECT_EQ(std::filesystem::file_size(dir_ / "append"),
            static_cast<std::uintmax_t>(kSegmentBytes));
}

TEST_F(SegmentZeroFillTest, AnUnalignedRangeReadsAsZeros) {
  EnableSegmentZeroFill();
  const int fd = MakeLikeLibraft("odd");
  ASSERT_EQ(posix_fallocate(fd, 0, 4096 + 100), 0);
  EXPECT_EQ(Read("odd"), std::string(4096 + 100, '\0'));
}

TEST_F(SegmentZeroFillTest, FailuresAreTheCLibrarys) {
  EnableSegmentZeroFill();
  EXPECT_EQ(posix_fallocate(-1, 0, 4096), EBADF);
  const int fd = MakeLikeLibraft("negative");
  EXPECT_EQ(posix_fallocate(fd, 0, -1), EINVAL);
  const int read_only = ::open((dir_ / "negative").c_str(), O_RDONLY);
  ASSERT_GE(read_only, 0);
  fds_.push_back(read_only);
  EXPECT_EQ(posix_fallocate(read_only, 0, 4096), EBADF);
}

}  // namespace
}  // namespace tenure::raft
