// Log segments written with zeros when allocated (raft/segment_zero_fill.h,
// decision 0059), on the file system the tests run on: the binary's
// posix_fallocate is the one libraries bind to, the blocks it allocates
// read as zeros and are written (no extent left "unwritten", where the file
// system tells), and what it cannot write directly is left as allocated.
#include "raft/segment_zero_fill.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
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
    std::filesystem::remove_all(dir_);
  }
  // Opened as libraft opens a segment: direct and synchronous where the
  // file system allows it.
  int Open(const std::string& name, int extra = O_DIRECT | O_DSYNC) {
    const std::string path = (dir_ / name).string();
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR | extra, 0600);
    if (fd < 0) fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0600);  // no O_DIRECT here
    EXPECT_GE(fd, 0);
    return fd;
  }
  static bool ReadsAllZeros(int fd, off_t length) {
    const int plain = ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY);
    if (plain < 0) return false;
    std::string bytes(static_cast<std::size_t>(length), 'x');
    const ssize_t n = ::pread(plain, bytes.data(), bytes.size(), 0);
    ::close(plain);
    return n == length && bytes.find_first_not_of('\0') == std::string::npos;
  }

  std::filesystem::path dir_;
};

TEST_F(SegmentZeroFillTest, LibrariesBindToThisBinarysPosixFallocate) {
  void* global = dlsym(RTLD_DEFAULT, "posix_fallocate");
  void* next = dlsym(RTLD_NEXT, "posix_fallocate");
  ASSERT_NE(global, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(global, next) << "libraft would get the C library's: segments stay unwritten";
}

TEST_F(SegmentZeroFillTest, AnAllocatedSegmentIsWrittenWithZeros) {
  EnableSegmentZeroFill();
  const int fd = Open("open-1");
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), kSegmentBytes);
  EXPECT_TRUE(ReadsAllZeros(fd, kSegmentBytes));
  const std::optional<int> unwritten = UnwrittenExtents(fd);
  ::close(fd);
  if (!unwritten) GTEST_SKIP() << "this file system has no FIEMAP: written or not, unknown";
  EXPECT_EQ(*unwritten, 0);
}

TEST_F(SegmentZeroFillTest, OffItOnlyAllocates) {
  // What the writes would meet without it, where the file system keeps
  // unwritten extents (ext4, xfs): this is what makes the test above mean
  // something on this machine.
  EnableSegmentZeroFill(false);
  const int fd = Open("open-2");
  ASSERT_EQ(posix_fallocate(fd, 0, kSegmentBytes), 0);
  EXPECT_TRUE(ReadsAllZeros(fd, kSegmentBytes));
  const std::optional<int> unwritten = UnwrittenExtents(fd);
  ::close(fd);
  if (!unwritten || *unwritten == 0) {
    GTEST_SKIP() << "this file system keeps no unwritten extents: nothing to compare";
  }
  EXPECT_GT(*unwritten, 0);
}

TEST_F(SegmentZeroFillTest, ARangeDirectWritesCannotTakeIsLeftAllocated) {
  EnableSegmentZeroFill();
  const int fd = Open("odd", O_DIRECT);
  const bool direct = (::fcntl(fd, F_GETFL) & O_DIRECT) != 0;
  EXPECT_EQ(posix_fallocate(fd, 0, 4096 + 100), 0);  // allocated, unaligned for O_DIRECT
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), 4096 + 100);
  EXPECT_TRUE(ReadsAllZeros(fd, 4096 + 100));
  ::close(fd);
  if (!direct) GTEST_SKIP() << "no O_DIRECT on this file system: the range was written";
}

TEST_F(SegmentZeroFillTest, FailuresAreTheCLibrarys) {
  EnableSegmentZeroFill();
  EXPECT_EQ(posix_fallocate(-1, 0, 4096), EBADF);
  const int fd = Open("negative");
  EXPECT_EQ(posix_fallocate(fd, 0, -1), EINVAL);
  const std::string path = (dir_ / "read-only").string();
  const int read_only = ::open(path.c_str(), O_CREAT | O_RDONLY, 0600);
  ASSERT_GE(read_only, 0);
  EXPECT_EQ(posix_fallocate(read_only, 0, 4096), EBADF);
  ::close(read_only);
  ::close(fd);
}

}  // namespace
}  // namespace tenure::raft
