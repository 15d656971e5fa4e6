// kqual replay, step 4: the reproducer's README.md — what failed, the one command that runs exactly
// that case again, what each file holds, and how to run the case under compute-sanitizer and cuda-gdb.
#include <fmt/format.h>

#include "kqual/core/self.hpp"
#include "replay_internal.hpp"

namespace kqual::pipeline::replay_detail {
namespace {

std::string what_failed(const ReadmeFacts& f) {
  std::string text;
  for (const auto& s : f.recorded.sides) {
    const std::string who = s.label == "candidate" ? std::string("The candidate") : "`" + s.label + "`";
    if (s.entry.is_null()) {
      text += fmt::format("- {} passed this case in the recorded run.\n", who);
      continue;
    }
    text += fmt::format("- {} failed it with **{}**: {}\n", who, s.entry.value("code", std::string("?")),
                        s.entry.value("detail", std::string()));
  }
  return text;
}

// The commands run kqual as "$KQUAL" (set by the first block): no kqual on the PATH is assumed.
std::string commands_block(const ReadmeFacts& f, const std::string& extra, const std::string& prefix) {
  std::string text = "```sh\ncd " + shell_word(f.outcome.dir.filename().string()) + "\n";
  for (const auto& side : f.outcome.sides) {
    std::string command = check_command(side, f.spec.id, f.outcome.run_seed, f.contract_copied);
    if (command.rfind("kqual ", 0) == 0) command.replace(0, 5, "\"$KQUAL\"");
    text += prefix + command + extra + "\n";
  }
  return text + "```\n";
}

// Which kqual the commands run: the one that wrote the folder, or another machine's.
std::string kqual_binary_text() {
  const std::optional<std::filesystem::path> self = self_executable();
  return fmt::format("The commands below run kqual as `\"$KQUAL\"`. The kqual that wrote this folder is{}; on another "
                     "machine, use that machine's (`build/tools/kqual/kqual` in a kqual checkout after `bash scripts/setup`, "
                     "or `kqual` where it is on the PATH):\n\n```sh\nKQUAL={}\n```\n\n",
                     self ? " `" + self->string() + "`" : " not known here", shell_word(self ? self->string() : "kqual"));
}

std::string files_table(const ReadmeFacts& f) {
  std::string t = "| file | what |\n|---|---|\n";
  for (const auto& side : f.outcome.sides)
    t += fmt::format("| `{}/` | {} manifest (`kqual.toml`, paths rewritten to the copies beside it) and its source or image |\n", side,
                     side == "candidate" ? std::string("the candidate's") : side + "'s");
  if (f.contract_copied)
    t += fmt::format("| `contracts/{}/` | the declared contract the run was judged by (its file's SHA-256 checked against the results) |\n",
                     f.recorded.contract_name);
  for (const auto& x : f.outcome.tensors)
    t += fmt::format("| `{}`, `{}` | {} `{}`: {} {} elements, shape {}, {} bytes (the `.bin` is the raw bytes) |\n", x.npy, x.raw,
                     x.role == "input" ? "input" : "reference output", x.name, x.dtype, x.elements, json(x.shape).dump(), x.bytes);
  t += "| `layout.json` | every tensor's dtype, NumPy dtype, shape, bytes, SHA-256 and the start offset the case places it at |\n";
  t += "| `failing.json` | what the results recorded about the failure on each side: code, detail, the first offending elements |\n";
  t += "| `case.json` | the case spec (id, dtype, dims, value family, offset, seed), the run's seed, the commands, notes |\n";
  return t;
}

std::string elements_section(const ReadmeFacts& f) {
  std::string text;
  for (const auto& s : f.recorded.sides) {
    if (!s.entry.is_object() || !s.entry.contains("failing_elements")) continue;
    text += fmt::format("\n{}:\n\n| output | run | index | expected | written | reference | bound |\n|---|---|---|---|---|---|---|\n",
                        s.label == "candidate" ? std::string("The first offending elements") : "On " + s.label);
    for (const auto& e : s.entry.at("failing_elements"))
      text += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", e.value("output", std::string()), e.value("run", 0),
                          e.value("index", std::int64_t(0)), e.value("expected", std::string()), e.value("actual", std::string()),
                          e.contains("reference") ? e.at("reference").dump() : std::string("—"),
                          e.contains("bound") ? e.at("bound").dump() : std::string("—"));
  }
  if (text.empty())
    text = "\nThe results hold no per-element record for this failure (a fault, a hang, a write past an output, or a run "
           "older than that record): `failing.json` keeps the detail above.\n";
  return text;
}

std::string data_section(const ReadmeFacts& f) {
  if (f.outcome.generated_on_device)
    return fmt::format(
        "The case is past 2^31 elements: its inputs are generated on the device by kqual's counter-based generator, not "
        "written here (gigabytes). `case.json` (`generated`) gives the generator's seed ({}) and each input's stream: element "
        "i of input stream s is `generated_bits(seed, s, i, dtype)` (include/kqual/contract/generated.hpp), the same on the "
        "device and on the CPU, so the command above makes exactly the run's inputs again. The output is checked {}.\n",
        f.spec.seed, f.files.generated.value("verified", std::string()));
  if (f.outcome.tensors.empty())
    return "No tensors are written (see the notes below); the command regenerates them from the contract and the case spec.\n";
  std::string text =
      "Inputs are what kqual uploads for this case, regenerated on the CPU from the contract and the case spec (value family "
      "`" + f.spec.family + "`, seed " + std::to_string(f.spec.seed) + "): the same function the check runs, so the bytes are "
      "the run's" + (f.files.inputs_verified ? " (their SHA-256 equal the ones results.json recorded)" : "") + ".\n\n"
      "```python\nimport numpy as np\n";
  for (const auto& x : f.outcome.tensors) {
    const std::string var = (x.role == "input" ? "" : "ref_") + x.name;
    if (x.dtype == "bf16")
      text += fmt::format("{} = (np.load('{}').astype(np.uint32) << 16).view(np.float32)  # bf16 bits -> f32\n", var, x.npy);
    else
      text += fmt::format("{} = np.load('{}')\n", var, x.npy);
  }
  text += "```\n\nfp8 tensors hold their codes (uint8); bf16 its bits (uint16). Reference outputs are the reference rounded to "
          "the output's dtype; where the contract compares under an error bound, `reference/<name>.f64.npy` and "
          "`reference/<name>.bound.npy` hold the reference in float64 and the admissible |written - reference| per element; "
          "where the contract names an alternative for special values, `reference/<name>.alt.f64.npy` holds the value (rounded "
          "to the output's dtype) also accepted where the reference is NaN or +-Inf.";
  if (f.spec.offset_elements != 0)
    text += fmt::format(" The case starts every tensor {} element(s) past an aligned address (`view_offset_bytes` in layout.json).",
                        f.spec.offset_elements);
  return text + "\n";
}

}  // namespace

std::string check_command(const std::string& side, const std::string& case_id, std::uint64_t seed, bool contracts_folder) {
  return fmt::format("kqual check {} --case {} --seed {}{} --out kqual-out/{}", side, shell_word(case_id), seed,
                     contracts_folder ? " --contracts contracts" : "", side);
}

std::string readme_text(const ReadmeFacts& f) {
  const bool compare = f.outcome.sides.size() == 2;
  std::string t = fmt::format("# Reproducer: case `{}` of contract {}\n\n", f.spec.id, f.recorded.contract_name);
  t += fmt::format("Written by `kqual replay` from a {} result{} of kqual {}. Recorded:\n\n", f.recorded.schema,
                   compare ? " (OLD vs NEW)" : "", f.recorded.kqual_version.empty() ? "?" : f.recorded.kqual_version);
  t += what_failed(f);
  t += fmt::format("\nThe case: dtype {}, dims {}, value family `{}`, offset {} element(s), case seed {}; the run's case-generator "
                   "seed {} (`{}`).\n",
                   to_string(f.spec.dtype), json(f.spec.dims).dump(), f.spec.family, f.spec.offset_elements, f.spec.seed,
                   f.outcome.run_seed, f.recorded.command_line);
  t += "\n## Run exactly this case again\n\nOn a machine with an NVIDIA GPU, from this folder's parent. " + kqual_binary_text();
  t += commands_block(f, "", "");
  t += fmt::format("\n`--case` runs this one case (found among the contract's cases under `--seed`, so it is the run's case, "
                   "seed and all) with every rule of a full check: poisoned and guarded outputs, inputs against unmapped pages, "
                   "two runs, the same diagnosis. {}The exit code is 1 while the kernel fails the case and 0 once it passes it "
                   "(one case passing is no acceptance: run a full `kqual check` then).\n",
                   compare ? "Each side runs the same case. " : "");
  if (f.outcome.expect_code != f.outcome.code)
    t += fmt::format("\nRun alone, the case fails with **{}**, not {}: {} is the run's diagnosis over all its cases (this one "
                     "failed while every smaller case passed), which one case cannot make. A full `kqual check` of the "
                     "candidate gives it again.\n",
                     f.outcome.expect_code.empty() ? std::string("its own fault") : f.outcome.expect_code, f.outcome.code, f.outcome.code);
  t += "\n## What is here\n\n" + files_table(f);
  t += "\n## Inputs and reference\n\n" + data_section(f);
  t += "\n## What the kernel wrote\n" + elements_section(f);
  t += "\n## Under compute-sanitizer\n\nkqual never touches CUDA in the process you start: the kernel runs in its worker "
       "process, a child, which compute-sanitizer follows (`--target-processes all`). Give the worker time (`--watchdog`), and "
       "leave out kqual's own sanitizer pass:\n\n";
  t += commands_block(f, " --watchdog 600 --no-sanitizer-pass", "compute-sanitizer --tool memcheck --target-processes all ");
  t += "\n`--tool racecheck`, `initcheck` and `synccheck` the same way. Add `\"-lineinfo\"` to `nvrtc_options` in the manifest "
       "(`[candidate]`) for source lines in the reports.\n";
  t += "\n## Under cuda-gdb\n\nAdd `\"-G\"` to `nvrtc_options` in the manifest's `[candidate]` (device code with debug "
       "information: slower, and a kernel that misbehaves only when optimised may then pass). cuda-gdb must keep the worker "
       "process kqual starts, and stop at the kernel's launch:\n\n";
  t += commands_block(f, " --watchdog 3600 --no-sanitizer-pass",
                      "cuda-gdb -ex 'set detach-on-fork off' -ex 'set schedule-multiple on' -ex 'set cuda break_on_launch "
                      "application' -ex run --args ");
  t += "\nThe first launch it stops at may be kqual's own (its input generator or poison kernels, named `kqual_*`): `continue` "
       "to the candidate's kernel. The watchdog of 3600 s keeps kqual from killing a worker you have stopped.\n";
  if (!f.files.notes.empty() || !f.outcome.notes.empty()) {
    t += "\n## Notes\n\n";
    for (const auto& n : f.outcome.notes) t += "- " + n + "\n";
  }
  return t;
}

}  // namespace kqual::pipeline::replay_detail
