// Malformed importer inputs are the user's input errors, never kqual's internal ones: `kqual
// import-definition` and `kqual import-kernelbench` exit 2 naming the file and the key for a value of
// another type (a name that is a number, a null where a boolean belongs), a name the written contract
// cannot carry ("x.y") or a problem no declared contract can express (no axis, a one-element output); a
// capture whose forward was never run on the CPU (random_forward null) imports with a note. Run as a
// user runs them: the kqual binary, fixtures written here (Definitions inline, captures derived from
// tests/import/fixtures/kernelbench/ in the capture script's format).
#include <gtest/gtest.h>

#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

const fs::path kKb = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/kernelbench";

const char* kDefinition = R"({
  "name": "scale_rows",
  "axes": {"n": {"type": "var"}, "h": {"type": "const", "value": 64}},
  "inputs": {"x": {"shape": ["n", "h"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["n", "h"], "dtype": "float32"}},
  "reference": "def run(x):\n    return 2 * x\n"
})";

struct Imported {
  test::CommandResult r;
  fs::path out;
};

Imported import_definition(const ScratchDir& dir, const json& def, const std::string& workloads = "") {
  const fs::path f = dir.path() / "def.json";
  write_file_atomic(f, def.dump(2));
  std::string cmd = test::kq() + " import-definition " + test::quote(f) + " --out " + test::quote(dir.path() / "c");
  if (!workloads.empty()) {
    write_file_atomic(dir.path() / "w.jsonl", workloads);
    cmd += " --workloads " + test::quote(dir.path() / "w.jsonl");
  }
  return {test::run(cmd), dir.path() / "c"};
}

// Exit 2, "kqual: error (input): <file>: <key>: ...", nothing written.
void expect_input_error(const Imported& i, const std::string& file_and_key) {
  EXPECT_EQ(i.r.exit_code, 2) << i.r.output;
  EXPECT_TRUE(test::contains(i.r.output, "kqual: error (input): ")) << i.r.output;
  EXPECT_TRUE(test::contains(i.r.output, file_and_key)) << i.r.output;
  EXPECT_FALSE(test::contains(i.r.output, "internal")) << i.r.output;
  EXPECT_FALSE(test::contains(i.r.output, "json.exception")) << i.r.output;
  EXPECT_FALSE(fs::exists(i.out));
}

TEST(ImportInputErrors, DefinitionBaseImports) {
  ScratchDir dir("kqual-import-errors");
  const Imported i = import_definition(dir, json::parse(kDefinition));
  EXPECT_EQ(i.r.exit_code, 0) << i.r.output;
  EXPECT_TRUE(fs::exists(i.out / "contract.toml"));
}

TEST(ImportInputErrors, DefinitionValuesOfAnotherTypeNameTheFileAndKey) {
  ScratchDir dir("kqual-import-errors");
  const std::string f = (dir.path() / "def.json").string();
  json d = json::parse(kDefinition);
  d["name"] = 3;
  expect_input_error(import_definition(dir, d), f + ": name: expected a string (the Definition's name), got the number 3");
  d = json::parse(kDefinition);
  d["inputs"]["x"]["shape"] = json::array({"n", 64});
  expect_input_error(import_definition(dir, d), f + ": inputs.x.shape[1]: expected a string (an axis name), got the number 64");
  d = json::parse(kDefinition);
  d["axes"]["n"]["type"] = nullptr;
  expect_input_error(import_definition(dir, d), f + ": axes.n.type: expected a string, got null");
  d = json::parse(kDefinition);
  d["inputs"] = json::array();
  expect_input_error(import_definition(dir, d), f + ": inputs: expected an object, got an array");
  d = json::parse(kDefinition);
  d["tolerance"] = {{"atol", "1e-3"}};
  expect_input_error(import_definition(dir, d), f + ": tolerance.atol: expected a number, got the string \"1e-3\"");
  d = json::parse(kDefinition);
  d["tolerance"] = {{"allow_negative_inf", nullptr}};
  expect_input_error(import_definition(dir, d), f + ": tolerance.allow_negative_inf: expected true or false, got null");
  d = json::parse(kDefinition);
  d["constraints"] = json::array({7});
  expect_input_error(import_definition(dir, d), f + ": constraints[0]: expected a string (a Python boolean expression)");
  d = json::parse(kDefinition);
  d["reference"] = json::object();
  expect_input_error(import_definition(dir, d), f + ": reference: expected a string (the Python source of run)");
}

TEST(ImportInputErrors, DefinitionNamesTheContractCannotCarryAreRefused) {
  // An input "x.y" would write [tensors.x.y] (a nested table) and cannot be a keyword argument of run().
  ScratchDir dir("kqual-import-errors");
  const std::string f = (dir.path() / "def.json").string();
  json d = json::parse(kDefinition);
  d["inputs"] = {{"x.y", {{"shape", {"n", "h"}}, {"dtype", "float32"}}}};
  expect_input_error(import_definition(dir, d), f + ": inputs.x.y: \"x.y\" is not a name kqual can write");
  d = json::parse(kDefinition);
  d["axes"]["2n"] = {{"type", "var"}};
  expect_input_error(import_definition(dir, d), f + ": axes.2n: \"2n\" is not a name kqual can write");
  d = json::parse(kDefinition);
  d["outputs"] = {{"n", {{"shape", {"n", "h"}}, {"dtype", "float32"}}}};
  expect_input_error(import_definition(dir, d), f + ": outputs.n: \"n\" is already the name of an axis or a tensor");
  d = json::parse(kDefinition);
  d["axes"]["h"]["value"] = -2;
  expect_input_error(import_definition(dir, d), f + ": axes.h.value: a const axis needs a positive integer value");
  d["axes"]["h"]["value"] = 0;  // an empty tensor, named as a literal "0" is
  expect_input_error(import_definition(dir, d), f + ": axes.h.value: 0: a zero-sized axis");
  d = json::parse(kDefinition);
  d["inputs"]["x"]["shape"] = json::array({"n", "0"});  // a literal size (SOL-ExecBench) of 0: an empty tensor
  expect_input_error(import_definition(dir, d), f + ": inputs.x.shape[1]: \"0\": a zero-sized dim");
}

TEST(ImportInputErrors, WorkloadLinesAreCheckedAndNamedByLine) {
  ScratchDir dir("kqual-import-errors");
  const std::string w = (dir.path() / "w.jsonl").string();
  const json d = json::parse(kDefinition);
  expect_input_error(import_definition(dir, d, "{\"axes\": {\"n\": 7}}\n{\"axes\": {\"n\": \"8\"}}\n"),
                     w + ":2: axes.n: expected an integer, got the string \"8\"");
  expect_input_error(import_definition(dir, d, "{\"axes\": {\"n\": -1}}\n"), w + ":1: axes.n: -1 is outside [1, 2^31 - 1]");
  {
    // A workload with an axis of 0 (an empty tensor) is left out of the shapes, said; the others import.
    ScratchDir empty("kqual-import-errors");
    const Imported e = import_definition(empty, d, "{\"axes\": {\"n\": 0}}\n{\"axes\": {\"n\": 9}}\n");
    EXPECT_EQ(e.r.exit_code, 0) << e.r.output;
    EXPECT_TRUE(test::contains(e.r.output, ":1: axes.n = 0 (an empty tensor): left out")) << e.r.output;
    EXPECT_TRUE(test::contains(read_text_file(e.out / "contract.toml"), "shapes = [\"n=9\"]"));
  }
  expect_input_error(import_definition(dir, d, "[1, 2]\n"), w + ":1: (top level): expected an object, got an array");
  expect_input_error(import_definition(dir, d, "{\"axes\": {\"n\": 7}, \"tolerance\": {\"rtol\": null}}\n"),
                     w + ":1: tolerance.rtol: expected a number, got null");
  // A workload the Definition's own constraint excludes is no benchmark shape: left out, said.
  json c = d;
  c["constraints"] = json::array({"n % 2 == 0"});
  const Imported i = import_definition(dir, c, "{\"axes\": {\"n\": 7}}\n{\"axes\": {\"n\": 8}}\n");
  EXPECT_EQ(i.r.exit_code, 0) << i.r.output;
  const std::string toml = read_text_file(i.out / "contract.toml");
  EXPECT_TRUE(test::contains(toml, "shapes = [\"n=8\"]")) << toml;
  EXPECT_TRUE(test::contains(i.r.output, w + ":1: workload n=7 is not a benchmark shape: the Definition's constraint \"n % 2 == 0\" is false"))
      << i.r.output;
  // The base (the smallest workload value above 1, n=7) breaks the constraint too: the first workload
  // inside it is the base instead; without workloads, one value that satisfies it.
  EXPECT_TRUE(test::contains(toml, "[axes.n]\nrange = [1, 2147483647]\nhints = [7, 8]   # the workloads' values (the six smallest, the largest)\nbase = 8\n")) << toml;
  EXPECT_TRUE(test::contains(i.r.output, "the base is n=8 (a workload's shape)")) << i.r.output;
  ScratchDir other("kqual-import-errors");
  c["constraints"] = json::array({"n % 128 == 0"});
  const Imported j = import_definition(other, c);
  EXPECT_EQ(j.r.exit_code, 0) << j.r.output;
  EXPECT_TRUE(test::contains(read_text_file(j.out / "contract.toml"), "base = 128\n"));
  ScratchDir third("kqual-import-errors");
  c["constraints"] = json::array({"n < 0"});
  expect_input_error(import_definition(third, c), (third.path() / "def.json").string() + ": constraints: the base shape n=64 breaks the domain");
}

// ---- KernelBench captures ----

json capture(const std::string& name) { return json::parse(read_text_file(kKb / (name + ".capture.json"))); }

Imported import_capture(const ScratchDir& dir, const std::string& problem, const json& cap) {
  const fs::path c = dir.path() / (problem + ".capture.json");
  write_file_atomic(c, cap.dump(1));
  const fs::path out = dir.path() / "c";
  return {test::run(test::kq() + " import-kernelbench " + test::quote(kKb / (problem + ".py")) + " --capture " + test::quote(c) +
                    " --out " + test::quote(out)),
          out};
}

TEST(ImportInputErrors, CaptureNullWhereABooleanBelongsNamesTheFileAndKey) {
  ScratchDir dir("kqual-import-errors");
  const std::string c = (dir.path() / "fixed_rows_unsampled.capture.json").string();
  json cap = capture("fixed_rows_unsampled");
  cap["tensors"][0]["dims"][1]["fixed"] = nullptr;
  expect_input_error(import_capture(dir, "fixed_rows_unsampled", cap), c + ": tensors[0].dims[1].fixed: expected true or false, got null");
  cap = capture("fixed_rows_unsampled");
  cap["ok"] = nullptr;
  expect_input_error(import_capture(dir, "fixed_rows_unsampled", cap), c + ": ok: expected true or false, got null");
  cap = capture("fixed_rows_unsampled");
  cap["random_forward"] = "no";
  expect_input_error(import_capture(dir, "fixed_rows_unsampled", cap), c + ": random_forward: expected true or false, got the string \"no\"");
  // Other fields the translation reads: a name that is a number, a dim value that is a string, a
  // tensor without its shape, sampled statistics that are not numbers.
  const std::string s = (dir.path() / "scale_by_scalar.capture.json").string();
  json sc = capture("scale_by_scalar");
  sc["tensors"][0]["param_name"] = 5;
  expect_input_error(import_capture(dir, "scale_by_scalar", sc), s + ": tensors[0].param_name: expected a string or null");
  sc = capture("scale_by_scalar");
  sc["tensors"][0]["dims"][0]["value"] = "1024";
  expect_input_error(import_capture(dir, "scale_by_scalar", sc), s + ": tensors[0].dims[0].value: expected an integer");
  sc = capture("scale_by_scalar");
  sc["tensors"][2].erase("shape");
  expect_input_error(import_capture(dir, "scale_by_scalar", sc), s + ": tensors[2].shape: missing (required)");
  sc = capture("scale_by_scalar");
  sc["tensors"][0]["values"]["mean"] = nullptr;
  expect_input_error(import_capture(dir, "scale_by_scalar", sc), s + ": tensors[0].values.mean: expected a number, got null");
  sc = capture("scale_by_scalar");
  sc["axis_constants"]["M"]["min"] = 1.5;
  expect_input_error(import_capture(dir, "scale_by_scalar", sc), s + ": axis_constants.M.min: expected an integer");
}

TEST(ImportInputErrors, ForwardNotRunByTheCaptureImportsWithANote) {
  // random_forward null: no tensor could be scaled down to the sample cap, so the capture neither
  // sampled values nor ran forward twice. The import goes on and says what is not known.
  ScratchDir dir("kqual-import-errors");
  const Imported i = import_capture(dir, "fixed_rows_unsampled", capture("fixed_rows_unsampled"));
  ASSERT_EQ(i.r.exit_code, 0) << i.r.output;
  EXPECT_TRUE(test::contains(i.r.output, "whether it is random is not known")) << i.r.output;
  const std::string toml = read_text_file(i.out / "contract.toml");
  EXPECT_TRUE(test::contains(toml, "[axes.c8388608]\nvalue = 8388608")) << toml;
  EXPECT_TRUE(test::contains(toml, "not sampled: assumed")) << toml;
  EXPECT_TRUE(test::contains(toml, "shapes = [\"batch_size=8\"]")) << toml;
}

TEST(ImportInputErrors, CaptureOfAProblemNoContractCanExpressIsRefusedByName) {
  ScratchDir dir("kqual-import-errors");
  const std::string p = (kKb / "scale_by_scalar.py").string();
  // No module-level integer moves any shape: a declared contract needs a variable axis.
  json cap = capture("scale_by_scalar");
  cap["axis_constants"] = json::object();
  cap["not_axes"] = {{"M", "changing it makes the module fail: AssertionError"}};
  expect_input_error(import_capture(dir, "scale_by_scalar", cap), p + ": shapes: no module-level integer moves a tensor's shape");
  // A 0-d tensor input (torch.tensor(0.5)) imports as one element along c1
  // (ImportKernelBench.ZeroDInputsAndParametersAreOneElementAlongC1); so does a 0-d output, a loss
  // (ImportKernelBench.AOneElementOutputImportsAndIsJudgedByRedrawingTheInputs).
  // A dim of size 0.
  cap = capture("scale_by_scalar");
  cap["tensors"][0]["dims"][1] = {{"value", 0}, {"fixed", true}, {"why", "no module-level integer changes it"}};
  expect_input_error(import_capture(dir, "scale_by_scalar", cap), "tensors[0].dims[1].value: 0: a tensor with no elements");
}

}  // namespace
}  // namespace kqual
