// kqual screen past one GPU, without a device (issue 26): GPU discovery and --gpus selection, and the
// lane dispatcher with fake lanes and with real worker processes that crash and hang (test hooks).
// Shards, their merge and the Slurm scripts are in screen_shard_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_gpus.hpp"
#include "kqual/worker/session.hpp"
#include "scaleout_test_util.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;
using test::scaleout::error_of;
using test::scaleout::has;

// ---- GPU discovery and --gpus ----

TEST(ScreenGpus, TheProcListIsReadInPciBusOrder) {
  ScratchDir tmp("kqual-gpus-test");
  for (const char* id : {"0000:3b:00.0", "0000:19:00.0", "0000:b1:00.0"}) fs::create_directories(tmp.path() / id);
  const HostGpus h = host_gpus(tmp.path(), nullptr);
  ASSERT_EQ(h.gpus.size(), 3u);
  EXPECT_EQ(h.gpus[0].pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(h.gpus[1].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(h.gpus[2].pci_bus_id, "0000:b1:00.0");
  EXPECT_EQ(h.gpus[2].visible, "2");
  const auto env = pin_environment(h.gpus[1]);
  EXPECT_EQ(env, (std::vector<std::pair<std::string, std::string>>{{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "1"}}));

  EXPECT_EQ(select_gpus("all", h).size(), 3u);
  EXPECT_EQ(select_gpus("2", h).size(), 2u);
  const auto list = select_gpus("2,0", h);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].ordinal, 2);
  EXPECT_EQ(list[1].ordinal, 0);
  ASSERT_EQ(select_gpus("1,", h).size(), 1u);
  EXPECT_EQ(select_gpus("1,", h)[0].ordinal, 1);
  for (const char* bad : {"4", "0", "x", "0,0", "0,5", "-1", "1.5", ""}) {
    ErrorKind k{};
    const std::string msg = error_of([&] { select_gpus(bad, h); }, &k);
    EXPECT_EQ(k, ErrorKind::usage) << bad;
    EXPECT_TRUE(has(msg, "--gpus")) << bad << ": " << msg;
  }
}

TEST(ScreenGpus, AnAllocationsVisibleDevicesAreTheHost) {
  const HostGpus h = host_gpus("/nonexistent", "2,3");
  ASSERT_EQ(h.gpus.size(), 2u);
  EXPECT_EQ(h.gpus[0].visible, "2");
  EXPECT_EQ(h.gpus[1].visible, "3");
  EXPECT_EQ(h.gpus[1].ordinal, 1);
  EXPECT_TRUE(host_gpus("/nonexistent", "").gpus.empty());
  EXPECT_TRUE(host_gpus("/nonexistent", "-1").gpus.empty());
}

TEST(ScreenGpus, WithoutAGpuGpusSaysSoAndNamesNoGpu) {
  const HostGpus none = host_gpus("/nonexistent/proc/driver/nvidia/gpus", nullptr);
  EXPECT_TRUE(none.gpus.empty());
  const std::string msg = error_of([&] { select_gpus("all", none); });
  EXPECT_TRUE(has(msg, "no GPU found")) << msg;
  EXPECT_TRUE(has(msg, "--no-gpu")) << msg;
}

// ---- the dispatcher, with fake lanes ----

struct Recorder {
  std::mutex mu;
  std::map<std::size_t, std::vector<ScreenVerdict>> by_item;
  std::map<std::size_t, std::size_t> lane_of;
  void record(std::size_t lane, std::size_t item, ScreenVerdict v) {
    std::lock_guard<std::mutex> lk(mu);  // dispatch_lanes serializes; this guards against it not doing so
    by_item[item].push_back(std::move(v));
    lane_of[item] = lane;
  }
};

TEST(ScreenDispatch, EveryItemIsRecordedOnceAndAFaultCostsOnlyItsItem) {
  Recorder rec;
  std::atomic<int> probes{0};
  LaneHooks h;
  h.check = [](std::size_t lane, std::size_t item, bool* fault) {
    ScreenVerdict v;
    v.verdict = ScreenVerdictKind::accepted;
    if (lane == 1 && item % 4 == 0) {  // lane 1's worker breaks down on some candidates
      *fault = true;
      v.verdict = ScreenVerdictKind::rejected;
      v.reason = "crash";
    }
    return v;
  };
  h.probe = [&](std::size_t) {
    ++probes;
    return std::string();
  };
  h.record = [&](std::size_t lane, std::size_t item, ScreenVerdict v) { rec.record(lane, item, std::move(v)); };
  const DispatchReport rep = dispatch_lanes(3, 40, h);
  ASSERT_EQ(rec.by_item.size(), 40u);
  for (const auto& [item, vs] : rec.by_item) EXPECT_EQ(vs.size(), 1u) << "item " << item;
  std::size_t judged = 0;
  for (std::size_t l = 0; l < 3; ++l) {
    judged += rep.judged[l];
    EXPECT_TRUE(rep.retired[l].empty());
  }
  EXPECT_EQ(judged, 40u);
  EXPECT_EQ(rep.unjudged, 0u);
  EXPECT_EQ(probes.load(), rep.faults[1]);
  EXPECT_EQ(rep.faults[0] + rep.faults[2], 0);
  for (const auto& [item, vs] : rec.by_item) {
    if (vs[0].verdict == ScreenVerdictKind::rejected) {
      EXPECT_EQ(rec.lane_of[item], 1u);
    }
  }
}

TEST(ScreenDispatch, ALaneWhoseGpuNoLongerAnswersIsRetiredAndTheOthersFinish) {
  Recorder rec;
  LaneHooks h;
  // Lane 1 waits until lane 0 holds a candidate: otherwise lane 1's thread may take all 25 before
  // lane 0's thread is scheduled (the test failed that way once under a loaded CI machine).
  std::atomic<bool> lane0_took{false};
  h.check = [&lane0_took](std::size_t lane, std::size_t, bool* fault) {
    if (lane == 0) lane0_took = true;
    while (lane != 0 && !lane0_took.load()) std::this_thread::yield();
    *fault = lane == 0;  // lane 0's first candidate faults, then its GPU is gone
    ScreenVerdict v;
    v.verdict = *fault ? ScreenVerdictKind::rejected : ScreenVerdictKind::accepted;
    return v;
  };
  h.probe = [](std::size_t lane) { return lane == 0 ? std::string("no CUDA-capable device is detected") : std::string(); };
  h.record = [&](std::size_t lane, std::size_t item, ScreenVerdict v) { rec.record(lane, item, std::move(v)); };
  const DispatchReport rep = dispatch_lanes(2, 25, h);
  EXPECT_EQ(rep.judged[0], 1u);
  EXPECT_EQ(rep.judged[1], 24u);
  EXPECT_TRUE(has(rep.retired[0], "no CUDA-capable device"));
  EXPECT_EQ(rec.by_item.size(), 25u);
  for (const auto& [item, vs] : rec.by_item) EXPECT_EQ(vs.size(), 1u);
}

TEST(ScreenDispatch, WhenEveryLaneIsRetiredTheRestIsIncompleteNotLost) {
  Recorder rec;
  LaneHooks h;
  h.check = [](std::size_t, std::size_t, bool* fault) {
    *fault = true;
    ScreenVerdict v;
    v.verdict = ScreenVerdictKind::rejected;
    return v;
  };
  h.probe = [](std::size_t) { return std::string("device lost"); };
  h.record = [&](std::size_t lane, std::size_t item, ScreenVerdict v) { rec.record(lane, item, std::move(v)); };
  const DispatchReport rep = dispatch_lanes(2, 10, h);
  EXPECT_EQ(rep.unjudged, 8u);
  ASSERT_EQ(rec.by_item.size(), 10u);
  std::size_t incomplete = 0;
  for (const auto& [item, vs] : rec.by_item) {
    ASSERT_EQ(vs.size(), 1u);
    if (vs[0].verdict == ScreenVerdictKind::incomplete) {
      ++incomplete;
      EXPECT_EQ(vs[0].reason, "no GPU left");
      EXPECT_TRUE(has(vs[0].detail, "device lost")) << vs[0].detail;
      EXPECT_EQ(rec.lane_of[item], std::size_t(-1));
    }
  }
  EXPECT_EQ(incomplete, 8u);
}

TEST(ScreenDispatch, AHookThatThrowsStopsTheLanesAndIsRethrown) {
  LaneHooks h;
  h.check = [](std::size_t, std::size_t item, bool*) {
    if (item == 3) throw_error(ErrorKind::io, "journal write failed");
    return ScreenVerdict{};
  };
  h.record = [](std::size_t, std::size_t, ScreenVerdict) {};
  EXPECT_TRUE(has(error_of([&] { dispatch_lanes(2, 50, h); }), "journal write failed"));
}

// ---- several lanes on one GPU: checks side by side, timings alone (--workers-per-gpu) ----

TEST(ScreenGpuGate, ChecksShareTheGpuAndATimingWaitsForThemAndHoldsItAlone) {
  GpuGate gate;
  auto a = std::make_unique<GpuGate::Hold>(gate.shared());
  auto b = std::make_unique<GpuGate::Hold>(gate.shared());
  EXPECT_EQ(gate.holders(), std::make_pair(2, 0));  // two checks at once
  std::atomic<bool> timing{false}, timed{false};
  std::jthread timer([&] {
    const GpuGate::Hold h = gate.exclusive();
    timing = true;
    EXPECT_EQ(gate.holders(), std::make_pair(0, 1));  // alone
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    timing = false;
    timed = true;
  });
  while (gate.exclusive_waiting() == 0) std::this_thread::yield();  // the timing is waiting, however slow the machine
  EXPECT_FALSE(timing.load());  // the checks still hold the GPU
  // A check that comes while the timing waits queues behind it: checks cannot starve a timing.
  std::atomic<bool> late_checked{false};
  std::jthread late([&] {
    const GpuGate::Hold h = gate.shared();
    EXPECT_TRUE(timed.load());
    EXPECT_FALSE(timing.load());
    late_checked = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(late_checked.load());
  a.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(timing.load());  // one check still runs
  b.reset();
  timer.join();
  late.join();
  EXPECT_TRUE(timed.load());
  EXPECT_TRUE(late_checked.load());
  EXPECT_EQ(gate.holders(), std::make_pair(0, 0));
}

TEST(ScreenGpuGate, NoTwoTimingsOverlapAndNoCheckRunsDuringOne) {
  GpuGate gate;
  std::atomic<int> checking{0}, timing{0}, overlaps{0};
  std::vector<std::jthread> lanes;
  for (int lane = 0; lane < 6; ++lane)
    lanes.emplace_back([&, lane] {
      for (int i = 0; i < 40; ++i) {
        if ((i + lane) % 4 == 0) {
          const GpuGate::Hold h = gate.exclusive();
          if (++timing > 1 || checking.load() > 0) ++overlaps;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          --timing;
        } else {
          const GpuGate::Hold h = gate.shared();
          ++checking;
          if (timing.load() > 0) ++overlaps;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          --checking;
        }
      }
    });
  lanes.clear();  // joined
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(ScreenGpuGate, WorkersPerGpuOutsideItsRangeIsRefusedByName) {
  for (int n : {0, -2, 33}) {
    ScreenOptions o;
    o.inputs = {test::repo_root() / "candidates/residual_add_relu/good"};
    o.use_gpu = false;
    o.workers_per_gpu = n;
    o.out_dir = fs::temp_directory_path() / "kqual-screen-workers-per-gpu-test";
    const std::string e = error_of([&] { screen(o); });
    EXPECT_TRUE(has(e, "--workers-per-gpu " + std::to_string(n) + ": must be 1 to 32")) << e;
  }
}

// ---- lanes of real worker processes (no GPU: crash and hang through the test hooks) ----

std::map<std::string, std::string> environ_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> env;
  for (std::size_t pos = 0; pos < all.size();) {
    const std::size_t end = all.find('\0', pos);
    const std::string kv = all.substr(pos, end - pos);
    const std::size_t eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    pos = end == std::string::npos ? all.size() : end + 1;
  }
  return env;
}

TEST(ScreenDispatch, RealWorkersArePinnedAndACrashOrHangCostsOneVerdictAndOneWorker) {
  // The parent's own restriction must not leak past the pin (getenv takes the first match).
  ::setenv("CUDA_VISIBLE_DEVICES", "6,7", 1);
  const HostGpus host = host_gpus("/nonexistent", std::getenv("CUDA_VISIBLE_DEVICES"));
  std::vector<std::unique_ptr<worker::Session>> lanes;
  for (const HostGpu& g : select_gpus("all", host)) {
    worker::SessionOptions so;
    so.exe = test::kqual_exe().string();
    so.watchdog_seconds = 2;
    so.worker_env = pin_environment(g);
    so.worker_env.push_back({"KQUAL_WORKER_TEST_HOOKS", "1"});
    lanes.push_back(std::make_unique<worker::Session>(so));
  }
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  Recorder rec;
  std::mutex env_mu;
  std::vector<std::map<std::string, std::string>> seen_env(lanes.size());
  LaneHooks h;
  h.check = [&](std::size_t lane, std::size_t item, bool* fault) {
    worker::WorkerClient& w = lanes[lane]->worker();
    const int started = w.processes_started();
    const worker::WorkerReply hello = w.call(json{{"op", "ping"}});
    if (hello.status == worker::WorkerReply::Status::ok) {
      std::lock_guard<std::mutex> lk(env_mu);
      seen_env[lane] = environ_of(hello.body["pid"].get<int>());
    }
    ScreenVerdict v;
    v.verdict = ScreenVerdictKind::accepted;
    if (item == 2 || item == 5) {  // the candidate crashes its worker, or hangs it past the watchdog
      const worker::WorkerReply r = w.call(json{{"op", item == 2 ? "crash" : "hang"}}, 1.0);
      v.verdict = ScreenVerdictKind::rejected;
      v.reason = worker::to_string(r.status);
    }
    const worker::WorkerReply p = w.call(json{{"op", "ping"}});  // as screen's check_on_gpu does
    *fault = p.status != worker::WorkerReply::Status::ok || w.processes_started() > std::max(started, 1);
    return v;
  };
  h.probe = [&](std::size_t lane) {
    const worker::WorkerReply r = lanes[lane]->worker().call(json{{"op", "ping"}});
    return r.status == worker::WorkerReply::Status::ok ? std::string() : r.reason;
  };
  h.record = [&](std::size_t lane, std::size_t item, ScreenVerdict v) { rec.record(lane, item, std::move(v)); };
  const DispatchReport rep = dispatch_lanes(lanes.size(), 8, h);
  ASSERT_EQ(rec.by_item.size(), 8u);
  for (const auto& [item, vs] : rec.by_item) {
    ASSERT_EQ(vs.size(), 1u);
    EXPECT_EQ(vs[0].verdict, item == 2 || item == 5 ? ScreenVerdictKind::rejected : ScreenVerdictKind::accepted) << item;
  }
  EXPECT_EQ(rec.by_item[2][0].reason, "crashed");
  EXPECT_EQ(rec.by_item[5][0].reason, "hung");
  EXPECT_EQ(rep.faults[0] + rep.faults[1], 2);
  EXPECT_TRUE(rep.retired[0].empty() && rep.retired[1].empty());
  // Each fault cost its lane one worker: a fresh process for the rest.
  EXPECT_EQ(lanes[0]->worker().processes_started() + lanes[1]->worker().processes_started(), 2 + 2);
  for (std::size_t l = 0; l < 2; ++l) {
    EXPECT_EQ(seen_env[l]["CUDA_VISIBLE_DEVICES"], l == 0 ? "6" : "7");
    EXPECT_EQ(seen_env[l]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  }
}

}  // namespace
}  // namespace kqual::pipeline
