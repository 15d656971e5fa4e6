#pragma once
// PyTorch submissions in kqual screen (docs/screen.md, "PyTorch submissions"): a candidate folder whose
// kqual.toml says kind = "torch_module" is not built; its correctness tier is `kqual check`'s
// (bench/torch_submission.hpp), in a submission worker of its own pinned to the lane's GPU.
#include <optional>
#include <string>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_gpus.hpp"
#include "kqual/pipeline/screen_timing.hpp"

namespace kqual::pipeline {

// The manifest when `cand` is a torch_module folder (nullopt for a kernel candidate); throws
// Error(input) for one that cannot be read, which screen records as manifest_invalid.
std::optional<bench::TorchSubmissionManifest> screen_submission_of(const std::filesystem::path& cand);

// The submission's verdict: accepted, rejected for its failure class, incomplete where PyTorch or
// CUDA is missing on the GPU machine or kqual's side failed (harness_error: never reused).
// `visible`: the lane's CUDA_VISIBLE_DEVICES ("" = the default device).
// `gate`: the lane's GPU, held shared while the submission is checked and alone while it is timed.
// `timer` (--timing; may be null): an accepted submission is then timed (ScreenTimer::time_submission).
ScreenVerdict check_screen_submission(const ScreenOptions& o, const bench::TorchSubmissionManifest& m, const std::string& visible,
                                      GpuGate& gate, ScreenTimer* timer = nullptr);

}  // namespace kqual::pipeline
