#pragma once
// kqual screen --timing: the timing tier of a screening campaign (docs/screen.md, "Timing tier"). Every
// candidate's correctness first, as without it; each accepted one then timed in the same lane's worker
// session against the contract's baselines (the bundled ones, --baselines, $KQUAL_BASELINES) under
// qualify's rules (fresh inputs, timed outputs verified, L2 flush, clock guard, A B B A rounds) and
// judged by qualify's speed rule (decision/speed.hpp): per shape, and an overall effect over the
// shape mix. A candidate whose timed outputs are wrong is rejected (timed_output_wrong), as qualify
// rejects it. The campaign is then ranked by that overall effect, in results.json, summary.md and a
// static HTML page.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/screen.hpp"

namespace kqual::build {
struct BuiltCandidate;
}
namespace kqual::worker {
class Session;
}

namespace kqual::pipeline {


// (ScreenTimingOptions, the command's options of this tier, is in screen.hpp.)

// Times accepted candidates; one per screen, shared by its lanes. Each contract's baselines are built
// once, on first use (for the screen's target), and its shapes, policy and mix read once.
class ScreenTimer {
 public:
  // `contracts`: the screen's lookup (a contract's name and its baselines' manifests resolve through it).
  ScreenTimer(const ScreenTimingOptions& o, std::string arch, std::filesystem::path scratch, std::uint64_t seed,
              contract::ContractLookup contracts);
  ~ScreenTimer();
  // Times `b` (already accepted) in session `s` and decides; returns the verdict's "speed" record and
  // may turn `v` into a rejection (timed_output_wrong). *fault when its worker broke down.
  void time(worker::Session& s, const build::BuiltCandidate& b, const std::string& contract, ScreenVerdict& v, bool* fault);
  // An accepted PyTorch submission: timed against PyTorch eager and torch.compile of its problem
  // (bench/torch_submission_timing.hpp) at this screen's shapes and decided by the same rule; the
  // record adds the effect against eager alone ("vs_eager", the peers' reference). Timed outputs
  // wrong make `v` a rejection (timed_output_wrong).
  void time_submission(const contract::Contract& c, const bench::TorchSubmission& s, const bench::SubmissionCheckOptions& co,
                       ScreenVerdict& v);

 private:
  struct Plan;
  const Plan& plan_for(const std::string& contract);
  ScreenTimingOptions o_;
  std::string arch_;
  std::filesystem::path scratch_;
  std::uint64_t seed_;
  contract::ContractLookup contracts_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
};

// The campaign ranked: accepted and timed candidates by overall effect (fastest first; those without
// an effect after them), and the peers' summary figures computed under kqual's rules — the fraction
// correct, and the fraction faster than the fastest baseline by more than 1.0x and 1.5x counted only
// where the effect's whole 95 % interval says so.
json screen_ranking(const std::vector<ScreenVerdict>& verdicts);
// Whether a speed record's effect covers the mix: not incomplete, no timing error, no shape that
// failed while timed. Only such an effect is ranked and counted.
bool speed_covers_the_mix(const json& speed);
// The candidate's own failure while timed rejects it: a crash, hang or sticky error (its worker
// broken: worker_fault, *fault set so that a fresh worker takes over), an error its launch raised
// (timed_launch_failed), or a wrong timed output. A shape refused before launch, or kqual's own
// failure, is neither.
void reject_failure_while_timed(const bench::TimingReport& tr, ScreenVerdict& v, bool* fault);
// (Its markdown section and HTML page are rendered in report/: render_screen_ranking_md, render_screen_ranking_html.)

}  // namespace kqual::pipeline
