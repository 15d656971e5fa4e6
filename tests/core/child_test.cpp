// core/child.hpp with /bin/sh children: a reply in time, a deadline passed, a child that dies
// mid-request (its stderr quoted), a write to a dead child (an answer, not a SIGPIPE), no zombie and
// no orphan left, the exact environment, its own process group, a wrapper, a start that fails.
#include "kqual/core/child.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "kqual/core/files.hpp"

namespace kqual {
namespace {

ChildSpec sh(const std::string& script) {
  ChildSpec s;
  s.exe = "/bin/sh";
  s.args = {"-c", script};
  s.env = environment_with();
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Whether a process is gone: no such process, or a zombie some other parent has yet to reap.
bool child_test_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

TEST(Child, AReplyInTimeAndTheChildReused) {
  Child c(sh("while read l; do echo \"got $l\"; done"));
  std::string line;
  for (const char* word : {"one", "two"}) {
    ASSERT_EQ(c.write(std::string(word) + "\n", Child::after(10)), ChildIo::ok);
    ASSERT_EQ(c.read_line(line, Child::after(10)), ChildIo::ok);
    EXPECT_EQ(line, std::string("got ") + word);
  }
  c.close_input();  // it reads to the end of its input, then ends by itself
  const ChildExit e = c.wait(Child::after(10));
  EXPECT_TRUE(e.exited) << e.describe();
  EXPECT_EQ(e.status, 0);
}

TEST(Child, LinesAndBytesSplitAnywhere) {
  Child c(sh("printf 'ab'; sleep 0.1; printf 'c\\ndef\\nxyz'"));
  std::string s;
  ASSERT_EQ(c.read_bytes(1, s, Child::after(10)), ChildIo::ok);
  EXPECT_EQ(s, "a");
  ASSERT_EQ(c.read_line(s, Child::after(10)), ChildIo::ok);
  EXPECT_EQ(s, "bc");
  ASSERT_EQ(c.read_line(s, Child::after(10)), ChildIo::ok);
  EXPECT_EQ(s, "def");
  ASSERT_EQ(c.read_bytes(3, s, Child::after(10)), ChildIo::ok);
  EXPECT_EQ(s, "xyz");
  EXPECT_EQ(c.read_line(s, Child::after(10)), ChildIo::closed);
}

TEST(Child, ADeadlinePassedIsNamedAndReturnsOnTime) {
  Child c(sh("read l; sleep 30"));
  ASSERT_EQ(c.write("question\n", Child::after(10)), ChildIo::ok);
  const auto t0 = std::chrono::steady_clock::now();
  std::string line;
  const ChildIo r = c.read_line(line, Child::after(0.3));
  EXPECT_EQ(r, ChildIo::timed_out);
  EXPECT_STREQ(to_string(r), "timed_out");
  EXPECT_GE(seconds_since(t0), 0.29);
  EXPECT_LT(seconds_since(t0), 10.0);
  const ChildExit e = c.kill();
  EXPECT_FALSE(e.exited);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_NE(e.describe().find("killed by signal 9"), std::string::npos) << e.describe();
}

TEST(Child, AWriteThatCannotFinishTimesOut) {
  // It never reads: the pipe fills, and the write returns at its deadline instead of blocking.
  Child c(sh("sleep 30"));
  const std::string big(4 << 20, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.write(big, Child::after(0.3)), ChildIo::timed_out);
  EXPECT_LT(seconds_since(t0), 10.0);
}

// A child that dies mid-request: the read says closed, the exit says how, and its stderr is quoted,
// whether it went to a file or was captured.
TEST(Child, AChildThatDiesMidRequestIsNamedWithItsStderrTail) {
  ScratchDir dir("kqual-child-test");
  for (const bool to_file : {true, false}) {
    ChildSpec s = sh("read l; echo \"giving up on $l\" >&2; exit 3");
    if (to_file) s.stderr_file = dir.path() / "stderr.txt";
    Child c(s);
    ASSERT_EQ(c.write("the request\n", Child::after(10)), ChildIo::ok);
    std::string line;
    EXPECT_EQ(c.read_line(line, Child::after(10)), ChildIo::closed);
    const ChildExit e = c.wait(Child::after(10));
    EXPECT_TRUE(e.exited);
    EXPECT_EQ(e.status, 3);
    EXPECT_EQ(e.describe(), "exited with status 3");
    EXPECT_EQ(c.stderr_tail(), "giving up on the request") << (to_file ? "stderr to a file" : "stderr captured");
  }
  {
    Child c(sh("kill -SEGV $$"));
    std::string line;
    EXPECT_EQ(c.read_line(line, Child::after(10)), ChildIo::closed);
    EXPECT_EQ(c.wait(Child::after(10)).signal, SIGSEGV);
    EXPECT_EQ(c.wait(Child::after(10)).describe(), "killed by signal 11 (Segmentation fault)");  // the same answer again
  }
}

TEST(Child, AWriteToADeadChildIsAnAnswerNotASignal) {
  // The default action of SIGPIPE would end this test binary: the write must not raise it here.
  struct sigaction dfl{}, old{};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, &old);
  {
    Child c(sh("exit 0"));
    while (!child_test_gone(c.pid())) usleep(1000);  // ended (not yet reaped: its stdin is closed)
    EXPECT_EQ(c.write(std::string(1 << 16, 'x'), Child::after(10)), ChildIo::closed);
    EXPECT_EQ(c.write("again\n", Child::after(10)), ChildIo::closed);
    sigset_t pending;
    sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "the SIGPIPE the write raised was left pending";
    EXPECT_TRUE(c.wait(Child::after(10)).exited);
  }
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(Child, NoZombieAndNothingItStartedIsLeft) {
  pid_t pid = -1, grandchild = -1;
  {
    Child c(sh("sleep 1000 & echo $!; wait"));
    pid = c.pid();
    std::string line;
    ASSERT_EQ(c.read_line(line, Child::after(10)), ChildIo::ok);
    grandchild = pid_t(std::stol(line));
    EXPECT_FALSE(child_test_gone(grandchild));
  }  // destroyed: its group killed, the child reaped
  errno = 0;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "the child was not reaped";
  const auto t0 = std::chrono::steady_clock::now();
  while (!child_test_gone(grandchild) && seconds_since(t0) < 10) usleep(2000);
  EXPECT_TRUE(child_test_gone(grandchild)) << "what the child started outlived it";
}

// In a group of its own, a child does not get the terminal's Ctrl-C: kqual's handler ends it with
// kqual, and kqual still ends by the signal itself.
TEST(ChildDeathTest, ItEndsWithKqualOnATerminatingSignal) {
  ScratchDir dir("kqual-child-signal");
  const std::filesystem::path pid_file = dir.path() / "pid";
  for (const int sig : {SIGINT, SIGTERM}) {
    EXPECT_EXIT(
        {
          Child c(sh("sleep 1000"));  // not ended by its stdin closing: only a kill ends it
          std::ofstream(pid_file) << c.pid();
          raise(sig);
        },
        testing::KilledBySignal(sig), "");
    std::ifstream in(pid_file);
    pid_t pid = -1;
    ASSERT_TRUE(in >> pid);
    const auto t0 = std::chrono::steady_clock::now();
    while (!child_test_gone(pid) && seconds_since(t0) < 10) usleep(2000);
    EXPECT_TRUE(child_test_gone(pid)) << "the child outlived kqual after signal " << sig;
  }
}

TEST(Child, ItsOwnProcessGroup) {
  Child c(sh("read l"));
  EXPECT_EQ(getpgid(c.pid()), c.pid());
  EXPECT_NE(getpgid(c.pid()), getpgrp());
}

TEST(Child, TheEnvironmentIsExactlyTheOneGiven) {
  ChildSpec s;
  s.exe = "/usr/bin/env";  // prints its environment, one NAME=value a line
  s.env = {"KQUAL_CHILD_A=1", "KQUAL_CHILD_B=two words"};
  Child c(s);
  std::vector<std::string> lines;
  std::string line;
  while (c.read_line(line, Child::after(10)) == ChildIo::ok) lines.push_back(line);
  EXPECT_EQ(lines, s.env);

  // environment_with: this process's environment, a given name replacing the inherited one.
  setenv("KQUAL_CHILD_OLD", "inherited", 1);
  setenv("KQUAL_CHILD_GONE", "x", 1);
  const std::vector<std::string> env = environment_with({{"KQUAL_CHILD_OLD", "given"}}, {"KQUAL_CHILD_GONE"});
  EXPECT_EQ(std::count(env.begin(), env.end(), "KQUAL_CHILD_OLD=given"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "KQUAL_CHILD_OLD=inherited"), 0);
  EXPECT_EQ(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.rfind("KQUAL_CHILD_GONE=", 0) == 0; }), 0);
  EXPECT_NE(std::find(env.begin(), env.end(), std::string("PATH=") + std::getenv("PATH")), env.end());
  unsetenv("KQUAL_CHILD_OLD");
  unsetenv("KQUAL_CHILD_GONE");
}

TEST(Child, AWrapperRunsTheChild) {
  ChildSpec s = sh("echo \"$KQUAL_CHILD_WRAPPED\"");
  s.wrapper = {"env", "KQUAL_CHILD_WRAPPED=under the wrapper"};  // looked up on PATH
  Child c(s);
  std::string line;
  ASSERT_EQ(c.read_line(line, Child::after(10)), ChildIo::ok);
  EXPECT_EQ(line, "under the wrapper");
}

TEST(Child, CapturedStderrIsDrainedAndKeepsItsEnd) {
  // 256 KiB of stderr before the reply: more than a pipe holds, so a reader that did not drain it
  // would wait forever; only the last stderr_kept bytes are kept.
  ChildSpec s = sh("i=0; while [ $i -lt 4096 ]; do echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >&2; i=$((i+1)); done; "
                   "echo 'the end' >&2; echo done");
  s.stderr_kept = 4096;
  Child c(s);
  std::string line;
  ASSERT_EQ(c.read_line(line, Child::after(60)), ChildIo::ok);
  EXPECT_EQ(line, "done");
  c.wait(Child::after(10));
  const std::string tail = c.stderr_tail(100);
  EXPECT_EQ(tail.substr(0, 3), "...");
  EXPECT_LE(tail.size(), 103u);
  EXPECT_EQ(tail.substr(tail.size() - 7), "the end");
}

TEST(Child, AStartThatFailsSaysWhatAndWhy) {
  ChildSpec s;
  s.exe = "/nonexistent/kqual-child";
  s.what = "worker";
  s.start_error_kind = ErrorKind::worker;
  try {
    Child c(s);
    FAIL() << "started";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::worker);
    EXPECT_EQ(std::string(e.what()), "cannot start worker '/nonexistent/kqual-child': No such file or directory");
  }
}

}  // namespace
}  // namespace kqual
