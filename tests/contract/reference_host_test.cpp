// The reference processes belong to the run, not to the contract (reference_host.hpp): one Python
// process per declared contract per host however many cases, another host another process, none
// left once the hosts end, and a process that dies mid-request named with its stderr's end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "contract_test_util.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

// y = 2 x over n, with the reference file `py` (function f).
struct HostContract {
  ScratchDir dir{"kqual-host-test"};
  fs::path file, reference;
  HostContract(const std::string& name, const std::string& py) {
    fs::create_directories(dir.path() / name);
    file = dir.path() / name / "contract.toml";
    reference = dir.path() / name / "reference.py";
    test_util::OneAxis keys;
    keys.axis = "range = [1, 100000]\nhints = [32]\nbase = 40";
    std::ofstream(file) << test_util::one_axis_contract(name, keys);
    std::ofstream(reference) << py;
  }
};

// Processes this test binary started whose command line names `text` (still running, or zombies
// nobody reaped).
int children_naming(const std::string& text) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream status(e.path() / "status");
    std::string line;
    bool mine = false;
    while (std::getline(status, line))
      if (line.rfind("PPid:", 0) == 0) mine = std::stol(line.substr(5)) == long(getpid());
    if (!mine) continue;
    std::ifstream cmd(e.path() / "cmdline");
    const std::string c((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    n += c.find(text) != std::string::npos;
  }
  return n;
}

TEST(ReferenceHost, OneProcessPerContractPerRunNoneInTheContract) {
  KQUAL_NEED_NUMPY();
  HostContract hc("host_twice", "def f(x):\n    return 2 * x\n");
  const Contract& c = load_declared_contract(hc.file);
  Supports s = test_util::f32_only();
  const auto cases = c.correctness_cases(s, 1, false);
  ASSERT_GE(cases.size(), 3u);
  {
    ReferenceHost run;
    for (const auto& cs : cases) (void)c.reference(c.make_case(cs), run);
    EXPECT_EQ(run.processes_started(), 1) << "one process for every case of one contract";
    EXPECT_EQ(children_naming(hc.reference.string()), 1);
    ReferenceHost other;  // another run: its own process, the first one's untouched
    (void)c.reference(c.make_case(cases.front()), other);
    EXPECT_EQ(other.processes_started(), 1);
    EXPECT_EQ(children_naming(hc.reference.string()), 2);
  }
  EXPECT_EQ(children_naming(hc.reference.string()), 0) << "the hosts ended: their processes are gone and reaped";
  // The contract kept none: a new run starts its own, and the one-call form ends its own.
  ReferenceHost again;
  EXPECT_EQ(c.reference(c.make_case(cases.back()), again).at(0).elements, c.make_case(cases.back()).inputs.at(0).elements);
  EXPECT_EQ(again.processes_started(), 1);
  (void)c.reference(c.make_case(cases.front()));
  EXPECT_EQ(children_naming(hc.reference.string()), 1);
}

TEST(ReferenceHost, BuiltInContractsStartNothing) {
  ReferenceHost run;
  const Contract& c = find_contract("softmax");
  Supports s = test_util::f32_only();
  (void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), run);
  EXPECT_EQ(run.processes_started(), 0);
}

TEST(ReferenceHost, AProcessThatDiesMidRequestIsNamedWithItsStderrAndRestarted) {
  KQUAL_NEED_NUMPY();
  // It dies on the first request after the hello, saying why on stderr, and answers again after.
  HostContract hc("host_dies",
                  "import os, sys\nmarker = os.path.join(os.path.dirname(__file__), 'died')\n"
                  "def f(x):\n    if not os.path.exists(marker):\n        open(marker, 'w').close()\n"
                  "        sys.stderr.write('the reference gave up here\\n'); sys.stderr.flush(); os._exit(3)\n    return 2 * x\n");
  const Contract& c = load_declared_contract(hc.file);
  Supports s = test_util::f32_only();
  const auto cases = c.correctness_cases(s, 1, false);
  ReferenceHost run;
  std::string e;
  try {
    (void)c.reference(c.make_case(cases.front()), run);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find(hc.file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("the reference process exited: the reference gave up here"), std::string::npos) << e;
  EXPECT_EQ(children_naming(hc.reference.string()), 0) << "the dead process was reaped";
  // The next evaluation starts a fresh process.
  (void)c.reference(c.make_case(cases.front()), run);
  EXPECT_EQ(run.processes_started(), 2);
}

}  // namespace
}  // namespace kqual::contract
