// The PyTorch baselines on the CPU (src/bench/torch_baseline_request.cpp): the request for each of
// the six built-in contracts (op name, every tensor's dtype and shape from the dims), the worker's
// op table agreeing with the contracts' domains, the options, whether the phase runs and the status
// line when it does not (torch missing included, from the real worker on a machine without it), the
// cubin launch of the fidelity path, and the Python files compiling. The timing itself is a GPU test
// (tests/device/torch_fidelity_device_test.cpp, tests/device/torch_baseline_device_test.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/process.hpp"

namespace kqual::bench {
namespace {
namespace fs = std::filesystem;

const fs::path kTorchTools = fs::path(KQUAL_SOURCE_DIR) / "tools/torch";

// The request of contract `name` at `dims` in dtype t, with files named after the tensors.
json request_for(const std::string& name, const contract::Dims& dims, DType t) {
  const contract::Contract& c = contract::find_contract(name);
  const auto op = torch_operation_of(c);
  EXPECT_TRUE(op) << name;
  std::vector<TorchTensorFiles> in, out;
  for (const auto& ts : c.domain().tensors)
    (ts.role == contract::Role::input ? in : out).push_back({ts.name, "/d/A/" + ts.name, "/d/B/" + ts.name});
  return torch_shape_request(c, *op, dims, t, in, out, TimingOptions{});
}

json shape_of(const json& req, const std::string& tensor) {
  if (req["inputs"].contains(tensor)) return req["inputs"][tensor]["shape"];
  for (const auto& o : req["outputs"])
    if (o["name"] == tensor) return o["shape"];
  return nullptr;
}

std::string dtype_of(const json& req, const std::string& tensor) {
  if (req["inputs"].contains(tensor)) return req["inputs"][tensor]["dtype"];
  for (const auto& o : req["outputs"])
    if (o["name"] == tensor) return o["dtype"];
  return "";
}

TEST(TorchRequest, EveryBuiltinNamesItsOpAndItsTensorsShapesFromTheDims) {
  struct Want {
    const char* contract;
    contract::Dims dims;
    DType dtype;
    std::map<std::string, std::vector<std::int64_t>> shapes;
  };
  const std::vector<Want> wants = {
      {"residual_add_relu", {{"n", 1000}}, DType::bf16, {{"x", {1000}}, {"r", {1000}}, {"y", {1000}}}},
      {"softmax", {{"rows", 3}, {"cols", 5}}, DType::f32, {{"x", {3, 5}}, {"y", {3, 5}}}},
      {"exclusive_scan", {{"n", 7}}, DType::i32, {{"x", {7}}, {"y", {7}}}},
      // rows x cols in, cols x rows out, both row-major.
      {"transpose", {{"rows", 3}, {"cols", 5}}, DType::i32, {{"x", {3, 5}}, {"y", {5, 3}}}},
      // a m x k, b k x n, c m x n.
      {"gemm", {{"m", 2}, {"n", 3}, {"k", 4}}, DType::bf16, {{"a", {2, 4}}, {"b", {4, 3}}, {"c", {2, 3}}}},
      // one sum per row.
      {"reduce_sum", {{"rows", 3}, {"cols", 5}}, DType::f32, {{"x", {3, 5}}, {"y", {3}}}},
  };
  std::set<std::string> covered;
  for (const auto& w : wants) {
    SCOPED_TRACE(w.contract);
    const json req = request_for(w.contract, w.dims, w.dtype);
    EXPECT_EQ(req.value("builtin", ""), w.contract);
    EXPECT_EQ(req["inputs"].size() + req["outputs"].size(), w.shapes.size()) << req.dump();
    for (const auto& [tensor, shape] : w.shapes) {
      EXPECT_EQ(shape_of(req, tensor), json(shape)) << tensor << ": " << req.dump();
      EXPECT_EQ(dtype_of(req, tensor), to_string(w.dtype)) << tensor;
    }
    // The files of both datasets, A then B; nothing a one-liner does not take.
    const json& first = req["inputs"].begin().value();
    EXPECT_EQ(first["files"].size(), 2u);
    EXPECT_EQ(first["files"][1].get<std::string>().rfind("/d/B/", 0), 0u);
    EXPECT_TRUE(req["scalars"].empty());
    EXPECT_TRUE(req["axes"].empty());
    covered.insert(w.contract);
  }
  EXPECT_EQ(covered, [] { const auto v = torch_builtins(); return std::set<std::string>(v.begin(), v.end()); }()) << "every built-in has a row here";
}

TEST(TorchRequest, TimingRulesTravelWithTheRequest) {
  TimingOptions o;
  o.flush_mode = "clean";
  o.clock_guard = false;
  o.samples_per_round = 17;
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  json req = torch_shape_request(c, *torch_operation_of(c), {{"n", 8}}, DType::f32, {{"x", "a", "b"}, {"r", "a", "b"}}, {{"y", "a", "b"}}, o);
  EXPECT_EQ(req["flush"], "clean");
  EXPECT_EQ(req["clock_guard"], false);
  EXPECT_EQ(req["samples"], 17);
  o.flush_l2 = false;
  req = torch_shape_request(c, *torch_operation_of(c), {{"n", 8}}, DType::f32, {{"x", "a", "b"}, {"r", "a", "b"}}, {{"y", "a", "b"}}, o);
  EXPECT_EQ(req["flush"], "none");
  // A dim the shape needs and the dims lack is kqual's bug, said by name.
  try {
    (void)torch_shape_request(c, *torch_operation_of(c), {{"m", 8}}, DType::f32, {{"x", "a", "b"}}, {}, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("tensor 'x' has axis 'n'"), std::string::npos) << e.what();
  }
}

TEST(TorchRequest, ADeclaredTorchReferenceGetsItsAxesAndNoBuiltin) {
  const auto& c = contract::load_declared_contract(fs::path(KQUAL_SOURCE_DIR) / "tests/contract/fixtures/declared/gelu_torch");
  const auto op = torch_operation_of(c);
  ASSERT_TRUE(op);
  EXPECT_TRUE(op->builtin.empty());
  EXPECT_EQ(op->describe(), "reference.py:gelu");
  const json req = torch_shape_request(c, *op, {{"n", 12}}, DType::f32, {{"x", "a", "b"}}, {{"y", "a", "b"}}, TimingOptions{});
  EXPECT_FALSE(req.contains("builtin"));
  EXPECT_EQ(req["inputs"]["x"]["shape"], json({12}));
  EXPECT_EQ(req["axes"]["n"], 12);
  // A NumPy reference: PyTorch has no form of it.
  EXPECT_FALSE(torch_operation_of(contract::load_declared_contract(fs::path(KQUAL_SOURCE_DIR) / "contracts/rmsnorm")));
}

// tools/torch/kqual_torch_ops.py's table, read as text: each built-in's inputs, outputs and dtypes
// must be the contract's (the C++ side sends names the worker checks; a drift is caught here, not on
// the GPU machine).
TEST(TorchRequest, TheWorkersOpTableMatchesTheContracts) {
  const std::string text = read_text_file(kTorchTools / "kqual_torch_ops.py");
  const std::regex entry(R"re("(\w+)": Op\(\[([^\]]*)\], \[([^\]]*)\], \[([^\]]*)\])re");
  auto names = [](const std::string& list) {
    std::vector<std::string> v;
    const std::regex q(R"re("(\w+)")re");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), q); it != std::sregex_iterator(); ++it) v.push_back((*it)[1]);
    return v;
  };
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    SCOPED_TRACE(name);
    seen.insert(name);
    const contract::Contract& c = contract::find_contract(name);
    std::vector<std::string> in, out, dtypes;
    for (const auto& ts : c.domain().tensors) (ts.role == contract::Role::input ? in : out).push_back(ts.name);
    for (DType t : c.dtypes()) dtypes.emplace_back(to_string(t));
    EXPECT_EQ(names((*it)[2]), in);
    EXPECT_EQ(names((*it)[3]), out);
    std::vector<std::string> py = names((*it)[4]);
    std::sort(py.begin(), py.end());
    std::sort(dtypes.begin(), dtypes.end());
    EXPECT_EQ(py, dtypes);
  }
  EXPECT_EQ(seen, [] { const auto v = torch_builtins(); return std::set<std::string>(v.begin(), v.end()); }());
}

TEST(TorchRequest, CompileModeOption) {
  EXPECT_EQ(parse_torch_compile_mode(nullptr), "default");
  EXPECT_EQ(parse_torch_compile_mode(""), "default");
  EXPECT_EQ(parse_torch_compile_mode("default"), "default");
  EXPECT_EQ(parse_torch_compile_mode("max-autotune-no-cudagraphs"), "max-autotune-no-cudagraphs");
  for (const char* bad : {"reduce-overhead", "max-autotune", "fast"}) {
    try {
      (void)parse_torch_compile_mode(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find(std::string("KQUAL_TORCH_COMPILE_MODE=") + bad), std::string::npos) << e.what();
    }
  }
}

TEST(TorchPhase, RunsForEveryBuiltinAndSaysWhyNot) {
  TimingOptions o;
  for (const std::string& name : torch_builtins()) EXPECT_EQ(torch_phase_blocker(contract::find_contract(name), o, std::nullopt), "") << name;
  const contract::Contract& c = contract::find_contract("softmax");
  EXPECT_EQ(torch_phase_blocker(c, o, std::vector<std::string>{}), "not run: --torch-baselines none");
  EXPECT_EQ(torch_phase_blocker(c, o, std::vector<std::string>{"compiled"}), "");
  EXPECT_EQ(torch_phase_blocker(contract::load_declared_contract(fs::path(KQUAL_SOURCE_DIR) / "contracts/rmsnorm"), o, std::nullopt),
            "not run: the contract's reference is not PyTorch ([reference] kind is not \"torch\")");
  TimingOptions inv = o;
  inv.flush_mode = "invalidate";
  EXPECT_EQ(torch_phase_blocker(c, inv, std::nullopt).rfind("not run: --l2-flush invalidate", 0), 0u) << torch_phase_blocker(c, inv, std::nullopt);
  TimingOptions cupti = o;
  cupti.timer = worker::TimerKind::cupti;
  EXPECT_NE(torch_phase_blocker(c, cupti, std::nullopt).find("CUDA events only"), std::string::npos);
  const char* old = std::getenv("KQUAL_TORCH_COMPILE_MODE");
  const std::string saved = old ? old : "";
  setenv("KQUAL_TORCH_COMPILE_MODE", "reduce-overhead", 1);
  const std::string why = torch_phase_blocker(c, o, std::nullopt);
  if (old) setenv("KQUAL_TORCH_COMPILE_MODE", saved.c_str(), 1);
  else unsetenv("KQUAL_TORCH_COMPILE_MODE");
  EXPECT_EQ(why.rfind("not run: KQUAL_TORCH_COMPILE_MODE=reduce-overhead", 0), 0u) << why;
}

TEST(TorchPhase, TheHelloDecidesTheRest) {
  TorchOperation softmax;
  softmax.builtin = "softmax";
  EXPECT_EQ(torch_hello_blocker(json{{"ok", false}, {"code", "no_torch"}, {"error", "No module named 'torch'"}}, softmax),
            "not run: torch not importable (No module named 'torch')");
  EXPECT_EQ(torch_hello_blocker(json{{"ok", false}, {"code", "no_cuda"}, {"error", "torch 2.11 sees no CUDA device"}}, softmax),
            "not run: torch 2.11 sees no CUDA device");
  EXPECT_EQ(torch_hello_blocker(json{{"ok", false}, {"code", "worker_died"}}, softmax), "not run: the PyTorch worker did not start");
  EXPECT_EQ(torch_hello_blocker(json{{"ok", true}, {"builtins", {"softmax", "gemm"}}}, softmax), "");
  EXPECT_NE(torch_hello_blocker(json{{"ok", true}, {"builtins", {"gemm"}}}, softmax).find("has no operation for softmax"), std::string::npos);
  TorchOperation ref;
  ref.reference = TorchReference{};
  EXPECT_EQ(torch_hello_blocker(json{{"ok", true}}, ref), "");
}

// The real worker on a machine without PyTorch (this one): its hello, and the status it becomes.
TEST(TorchPhase, TheRealWorkerWithoutTorchGivesTheNotRunLine) {
  const std::string py = contract::reference_python();
  ProcessResult probe = run_process(py, {"-c", "import torch"}, {}, {}, 60);
  if (probe.exited && probe.exit_code == 0) GTEST_SKIP() << "PyTorch is importable here: the device suites time it";
  ProcessResult pr = run_process(py, {contract::torch_tool("timing_worker.py").string()}, {}, {}, 60);
  ASSERT_TRUE(pr.exited) << pr.err;
  EXPECT_EQ(pr.exit_code, 0) << pr.err;
  const json hello = json::parse(pr.out.substr(0, pr.out.find('\n')));
  TorchOperation op;
  op.builtin = "residual_add_relu";
  EXPECT_EQ(torch_hello_blocker(hello, op).rfind("not run: torch not importable (torch not importable with ", 0), 0u)
      << torch_hello_blocker(hello, op);
}

TEST(TorchFidelity, OneLaunchOfPointersAndIntegers) {
  worker::Launch l;
  l.kernel = "_Z12add_relu_vecIfEvPKT_S2_PS0_x";
  l.grid = {528, 1, 1};
  l.block = {256, 1, 1};
  l.shared = 0;
  l.args = {worker::Arg::pointer("x"), worker::Arg::pointer("r"), worker::Arg::pointer("y"), worker::Arg::value(65536, 8),
            worker::Arg::value(-3, 4)};
  const json j = torch_cubin_launch("/m/kernel.cubin", {l}, {});
  EXPECT_EQ(j["module"], "/m/kernel.cubin");
  EXPECT_EQ(j["kernel"], l.kernel);
  EXPECT_EQ(j["grid"], json({528, 1, 1}));
  EXPECT_EQ(j["block"], json({256, 1, 1}));
  EXPECT_EQ(j["shared"], 0);
  EXPECT_EQ(j["args"][0], json({{"tensor", "x"}}));
  EXPECT_EQ(j["args"][3], json({{"value", 65536}, {"bytes", 8}}));
  EXPECT_EQ(j["args"][4], json({{"value", -3}, {"bytes", 4}}));
  auto refused = [](const std::vector<worker::Launch>& ls, const std::vector<worker::Buffer>& scratch, const std::string& why) {
    try {
      (void)torch_cubin_launch("/m/k.cubin", ls, scratch);
      ADD_FAILURE() << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({l, l}, {}, "one launch; this plan has 2");
  refused({l}, {worker::Buffer{"tmp", worker::BufferKind::scratch, 64}}, "1 scratch buffer");
  worker::Launch lib = l;
  lib.library = "cub.exclusive_sum<float>";
  refused({lib}, {}, "not library routine cub.exclusive_sum<float>");
}

TEST(TorchReport, OverheadAndWindowAreApartFromTheSamples) {
  TorchBaselineReport rep;
  rep.compile_mode = "default";
  TorchShapeStartup st;
  st.shape = "n=65536";
  st.compile_s = 3.5;
  st.window["eager"] = "cuda_graph";
  st.overhead.push_back({"eager", 0.020, 0.008, 0.012, 25.0, 4.0, 21.0});
  rep.startup.push_back(st);
  const json j = rep.to_json();
  EXPECT_EQ(j["compile_mode"], "default");
  EXPECT_EQ(j["startup"][0]["window"]["eager"], "cuda_graph");
  EXPECT_DOUBLE_EQ(j["startup"][0]["python_overhead"][0]["overhead_ms"].get<double>(), 0.012);
  EXPECT_DOUBLE_EQ(j["startup"][0]["torch_compile_s"].get<double>(), 3.5);
}

// `python3 -m py_compile` over the worker and its modules (the cache goes to a scratch folder, not
// into the source tree).
TEST(TorchWorkerSource, EveryPythonFileCompiles) {
  ScratchDir cache("kqual-pycache");
  int files = 0;
  for (const auto& e : fs::directory_iterator(kTorchTools)) {
    if (e.path().extension() != ".py") continue;
    ++files;
    ProcessResult pr = run_process(contract::reference_python(), {"-m", "py_compile", e.path().string()}, {{"PYTHONPYCACHEPREFIX", cache.path().string()}}, {}, 60);
    EXPECT_TRUE(pr.exited && pr.exit_code == 0) << e.path() << ": " << pr.err;
  }
  EXPECT_GE(files, 4);
}

}  // namespace
}  // namespace kqual::bench
