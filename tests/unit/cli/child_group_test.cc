// Real processes, no mocks. Waits poll with deadlines. A process counts as
// gone when kill() says ESRCH or it is a zombie: orphans are reparented to
// PID 1, which in some containers never reaps them, and a zombie cannot act.
#include "cli/child_group.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tenure::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    poll(nullptr, 0, 5);
  }
}

// State letter from /proc/<pid>/stat, or 0 if the process does not exist.
char ProcState(pid_t pid, pid_t* pgrp = nullptr, pid_t* ppid = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  auto paren = line.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(paren + 2));
  char state = 0;
  long parent = 0, group = 0;
  rest >> state >> parent >> group;
  if (pgrp != nullptr) *pgrp = static_cast<pid_t>(group);
  if (ppid != nullptr) *ppid = static_cast<pid_t>(parent);
  return state;
}

bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state = ProcState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

// Members of a process group that are not zombies.
std::vector<pid_t> LiveMembers(pid_t pgid) {
  std::vector<pid_t> live;
  if (kill(-pgid, 0) != 0 && errno == ESRCH) return live;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return live;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    pid_t group = 0;
    char state = ProcState(static_cast<pid_t>(pid), &group);
    if (group == pgid && state != 0 && state != 'Z' && state != 'X') {
      live.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(dir);
  return live;
}

int CountOpenFds() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
  closedir(dir);
  return count;
}

// Waits for the status fd, then reaps.
Result<int> ReapWithin(ChildGroup& group, milliseconds timeout) {
  pollfd pfd{group.status_fd(), POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(timeout.count())) != 1) {
    return Status::Timeout("status fd not readable");
  }
  return group.Reap();
}

// A pid written by the command, once the line is complete.
pid_t ReadPidFile(const std::string& path) {
  pid_t pid = 0;
  WaitUntil(
      [&] {
        std::ifstream in(path);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (text.empty() || text.back() != '\n') return false;
        pid = static_cast<pid_t>(std::stol(text));
        return pid > 0;
      },
      milliseconds(5000));
  return pid;
}

// Per-test scratch directory, and SIGKILL of everything the test created on
// the way out (also when an assertion fails half-way).
class ChildGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "child_group_XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    for (pid_t pgid : pgids_) kill(-pgid, SIGKILL);
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t child : children_) waitpid(child, nullptr, 0);
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::vector<pid_t> pgids_;     // groups to SIGKILL
  std::vector<pid_t> pids_;      // single processes to SIGKILL
  std::vector<pid_t> children_;  // our own children to reap
};

ChildGroup StartOrDie(const std::vector<std::string>& argv,
                      const std::vector<std::string>& env = {}) {
  Result<ChildGroup> group = ChildGroup::Start(argv, env);
  EXPECT_TRUE(group.ok()) << group.status().ToString();
  return std::move(group).value();
}

TEST_F(ChildGroupTest, ReportsExitCodeInShellConvention) {
  ChildGroup exits = StartOrDie({"sh", "-c", "exit 7"});
  pgids_.push_back(exits.pgid());
  Result<int> code = ReapWithin(exits, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 7);
  EXPECT_EQ(*exits.Reap(), 7);  // idempotent
  EXPECT_FALSE(exits.running());

  ChildGroup killed = StartOrDie({"sh", "-c", "kill -TERM $$"});
  pgids_.push_back(killed.pgid());
  code = ReapWithin(killed, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGTERM);
}

TEST_F(ChildGroupTest, MissingBinaryGives127AndAMessage) {
  ::testing::internal::CaptureStderr();
  Result<ChildGroup> group = ChildGroup::Start({"/nonexistent/tenure-no-such-cmd", "x"}, {});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  pgids_.push_back(group->pgid());
  Result<int> code = ReapWithin(*group, milliseconds(5000));
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 127);
  EXPECT_NE(err.find("tenure run: cannot start /nonexistent/tenure-no-such-cmd: "
                     "No such file or directory"),
            std::string::npos)
      << err;
}

TEST_F(ChildGroupTest, RejectsBadArguments) {
  EXPECT_EQ(ChildGroup::Start({}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ChildGroup::Start({"true"}, {"NOEQUALS"}).status().code(), Code::kInvalidArgument);
}

TEST_F(ChildGroupTest, ExtraEnvironmentReachesTheCommand) {
  ASSERT_EQ(setenv("TENURE_CHILD_GROUP_TEST", "inherited", 1), 0);
  ChildGroup group = StartOrDie(
      {"sh", "-c",
       "test \"$TENURE_FENCING_TOKEN\" = 42 && test \"$TENURE_CHILD_GROUP_TEST\" = replaced"},
      {"TENURE_FENCING_TOKEN=42", "TENURE_CHILD_GROUP_TEST=replaced"});
  pgids_.push_back(group.pgid());
  Result<int> code = ReapWithin(group, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 0);

  ChildGroup inherited = StartOrDie({"sh", "-c", "test \"$TENURE_CHILD_GROUP_TEST\" = inherited"});
  pgids_.push_back(inherited.pgid());
  code = ReapWithin(inherited, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 0);
  unsetenv("TENURE_CHILD_GROUP_TEST");
}

TEST_F(ChildGroupTest, TerminateReachesGrandchild) {
  ChildGroup group = StartOrDie({"sh", "-c", "sleep 300 & echo $! > " + File("gc") + "; wait"});
  pgids_.push_back(group.pgid());
  pid_t grandchild = ReadPidFile(File("gc"));
  ASSERT_GT(grandchild, 0);
  pids_.push_back(grandchild);
  EXPECT_FALSE(ProcessGone(grandchild));
  group.Terminate();
  Result<int> code = ReapWithin(group, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }, milliseconds(5000)));
}

// Proves the grandchild gets SIGTERM from Terminate() itself, not from the
// keeper's clean-up: the shell ignores TERM and only exits (with 3) after
// its background sleep has died. The sleep starts before the trap (so it
// keeps TERM's default) and the pid file is written after it, so the test
// never signals a shell that has not yet set its trap.
TEST_F(ChildGroupTest, TerminateIsDeliveredToGrandchildDirectly) {
  ChildGroup group = StartOrDie(
      {"sh", "-c", "sleep 300 & gc=$!; trap '' TERM; echo $gc > " + File("gc") + "; wait; exit 3"});
  pgids_.push_back(group.pgid());
  pid_t grandchild = ReadPidFile(File("gc"));
  ASSERT_GT(grandchild, 0);
  pids_.push_back(grandchild);
  group.Terminate();
  Result<int> code = ReapWithin(group, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 3);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }, milliseconds(5000)));
}

TEST_F(ChildGroupTest, KillStopsWhatIgnoresTerminate) {
  ChildGroup group =
      StartOrDie({"sh", "-c", "trap '' TERM; sleep 300 & echo $! > " + File("gc") + "; wait"});
  pid_t pgid = group.pgid();
  pgids_.push_back(pgid);
  pid_t grandchild = ReadPidFile(File("gc"));
  ASSERT_GT(grandchild, 0);
  pids_.push_back(grandchild);
  group.Terminate();
  // A negative needs a time bound: 300 ms is ample for SIGTERM to act.
  pollfd pfd{group.status_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 300), 0) << "the command should have ignored SIGTERM";
  EXPECT_FALSE(ProcessGone(grandchild));
  EXPECT_EQ(group.Reap().status().code(), Code::kUnavailable);
  group.Kill();
  Result<int> code = ReapWithin(group, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return LiveMembers(pgid).empty(); }, milliseconds(5000)));
  EXPECT_TRUE(ProcessGone(grandchild));
}

// The key property: a supervisor killed with SIGKILL takes the whole group
// with it, grandchildren included.
TEST_F(ChildGroupTest, SupervisorSigkillKillsTheWholeGroup) {
  std::string pgid_file = File("pgid");
  std::string gc_file = File("gc");
  pid_t supervisor = fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    Result<ChildGroup> group = ChildGroup::Start(
        {"sh", "-c", "sleep 300 & echo $! > " + gc_file + "; exec sleep 300"}, {});
    if (!group.ok()) _exit(1);
    std::string text = std::to_string(group->pgid()) + "\n";
    FILE* out = std::fopen(pgid_file.c_str(), "w");
    if (out == nullptr) _exit(1);
    std::fputs(text.c_str(), out);
    std::fclose(out);
    for (;;) pause();
  }
  children_.push_back(supervisor);
  pids_.push_back(supervisor);
  pid_t pgid = ReadPidFile(pgid_file);
  ASSERT_GT(pgid, 0);
  pgids_.push_back(pgid);
  pid_t grandchild = ReadPidFile(gc_file);
  ASSERT_GT(grandchild, 0);
  pids_.push_back(grandchild);
  // keeper, the exec'd sleep (the command) and the background sleep.
  ASSERT_TRUE(WaitUntil([&] { return LiveMembers(pgid).size() == 3; }, milliseconds(5000)))
      << LiveMembers(pgid).size();

  auto start = Clock::now();
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  ASSERT_EQ(waitpid(supervisor, nullptr, 0), supervisor);
  children_.clear();
  bool gone = WaitUntil([&] { return LiveMembers(pgid).empty(); }, milliseconds(5000));
  auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  EXPECT_TRUE(gone) << "still alive: " << LiveMembers(pgid).size();
  EXPECT_TRUE(ProcessGone(grandchild));
  std::printf("[ measured ] supervisor SIGKILL -> group gone in %.3f ms\n",
              static_cast<double>(elapsed.count()) / 1000.0);
}

TEST_F(ChildGroupTest, CommandExitKillsLeftoverGrandchild) {
  ChildGroup group = StartOrDie({"sh", "-c", "sleep 300 & echo $! > " + File("gc") + "; exit 5"});
  pid_t pgid = group.pgid();
  pgids_.push_back(pgid);
  pid_t grandchild = ReadPidFile(File("gc"));
  ASSERT_GT(grandchild, 0);
  pids_.push_back(grandchild);
  // Do not Reap() yet: Reap() also kills the group, and this test is about
  // the keeper doing it on its own.
  pollfd pfd{group.status_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }, milliseconds(5000)));
  EXPECT_TRUE(WaitUntil([&] { return LiveMembers(pgid).empty(); }, milliseconds(5000)));
  Result<int> code = group.Reap();
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 5);
}

TEST_F(ChildGroupTest, DestructorLeavesNoProcessZombieOrFd) {
  int fds_before = CountOpenFds();
  pid_t pgid = 0;
  pid_t grandchild = 0;
  {
    ChildGroup group = StartOrDie({"sh", "-c", "sleep 300 & echo $! > " + File("gc") + "; wait"});
    pgid = group.pgid();
    pgids_.push_back(pgid);
    grandchild = ReadPidFile(File("gc"));
    ASSERT_GT(grandchild, 0);
    pids_.push_back(grandchild);
    EXPECT_EQ(CountOpenFds(), fds_before + 2);  // control write end, status read end
  }
  // The keeper was our child: reaped, so no zombie of ours and no /proc entry.
  pid_t waited = waitpid(pgid, nullptr, WNOHANG);
  int wait_errno = errno;
  EXPECT_EQ(waited, -1);
  EXPECT_EQ(wait_errno, ECHILD);
  EXPECT_EQ(ProcState(pgid), 0);
  EXPECT_TRUE(WaitUntil([&] { return LiveMembers(pgid).empty(); }, milliseconds(5000)));
  EXPECT_TRUE(ProcessGone(grandchild));
  EXPECT_EQ(CountOpenFds(), fds_before);
  // Nothing else became our zombie either.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
}

// PR_SET_PDEATHSIG fires when the thread that forked the keeper exits; the
// keeper must tell that apart from the supervisor's death.
TEST_F(ChildGroupTest, GroupOutlivesTheThreadThatStartedIt) {
  std::optional<ChildGroup> group;
  std::thread starter([&] { group.emplace(StartOrDie({"sleep", "300"})); });
  starter.join();
  ASSERT_TRUE(group.has_value());
  pgids_.push_back(group->pgid());
  pollfd pfd{group->status_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 300), 0) << "the group died with the starting thread";
  EXPECT_EQ(LiveMembers(group->pgid()).size(), 2u);
  group->Kill();
  Result<int> code = ReapWithin(*group, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGKILL);
}

TEST_F(ChildGroupTest, MovedGroupStaysControllable) {
  ChildGroup first = StartOrDie({"sleep", "300"});
  pid_t pgid = first.pgid();
  pgids_.push_back(pgid);
  ChildGroup second = std::move(first);
  EXPECT_EQ(second.pgid(), pgid);
  EXPECT_FALSE(first.running());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  second.Terminate();
  Result<int> code = ReapWithin(second, milliseconds(5000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return LiveMembers(pgid).empty(); }, milliseconds(5000)));
}

}  // namespace
}  // namespace tenure::cli
