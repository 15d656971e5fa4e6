// `kqual contracts`: every contract a manifest can name — the built-in ones and the declared ones
// (contract.toml files in contracts/ folders, $KQUAL_CONTRACTS and --dir) — with what each covers.
// --verify also runs each declared contract's reference on its first case (the non-triviality check
// included), so a broken reference shows here rather than in a candidate's check. The command is the
// run that owns the reference processes: one ReferenceHost, each contract's Python process started
// once for its check and its timing.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <set>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/self.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

struct ContractsOptions {
  std::vector<std::filesystem::path> dirs;
  bool verify = false;
  std::int64_t time_elements = 0;  // --time-reference
  std::string cases;               // --cases NAME: the correctness cases that contract generates
  std::string dtype, family;       // narrowing --cases
};

// kqual contracts --cases NAME: every correctness case the contract generates for a candidate claiming
// everything it allows (or --dtype only), with its dims and family: the IDs `kqual check --case` takes.
int list_cases(const ContractsOptions& o, const GlobalOptions& g) {
  const contract::ContractLookup lookup(contract::ContractSources{o.dirs, false});  // --dir: folders of the user's
  const contract::Contract& c = lookup.resolve(o.cases, std::filesystem::current_path());
  contract::Supports wide;
  wide.dtypes = c.dtypes();
  if (!o.dtype.empty()) {
    const auto t = parse_dtype(o.dtype);
    if (!t || std::find(wide.dtypes.begin(), wide.dtypes.end(), *t) == wide.dtypes.end())
    {
      std::vector<std::string> has;
      for (DType d : wide.dtypes) has.emplace_back(to_string(d));
      throw_error(ErrorKind::usage, fmt::format("--dtype {}: contract {} has dtypes {}", o.dtype, c.name(), fmt::join(has, ", ")));
    }
    wide.dtypes = {*t};
  }
  wide.min_alignment_bytes = 1;
  wide.max_n = contract::kUnlimited;
  json out = json::array();
  std::set<std::string> families;
  for (const auto& cs : c.correctness_cases(wide, 1, false)) {
    families.insert(cs.family);
    if (!o.family.empty() && cs.family != o.family) continue;
    out.push_back({{"id", cs.id}, {"dtype", to_string(cs.dtype)}, {"dims", contract::format_dims(cs.dims)}, {"family", cs.family}});
  }
  if (!o.family.empty() && !families.count(o.family))
    throw_error(ErrorKind::usage, fmt::format("--family {}: contract {} has families {}", o.family, c.name(), fmt::join(families, ", ")));
  if (g.json) {
    std::cout << out.dump(2) << "\n";
    return kExitPass;
  }
  for (const auto& j : out) fmt::print("{}\n", j["id"].get<std::string>());
  fmt::print(stderr, "{} case(s) of {} (seed 1; a candidate's own claims narrow them; kqual check --case ID runs one)\n", out.size(), c.name());
  return kExitPass;
}

// One case of about `elements` elements in its largest tensor (the base shape, its first given
// axis grown), timed: inputs generated, reference evaluated (in its process), expected outputs built.
json time_reference(const contract::Contract& c, std::int64_t elements, contract::ReferenceHost& host) {
  contract::Supports wide;
  wide.dtypes = c.dtypes();
  wide.min_alignment_bytes = 1;
  wide.max_n = contract::kUnlimited;
  auto largest = [&](const contract::Dims& d) {
    std::int64_t m = 0;
    for (const auto& t : c.tensors()) m = std::max(m, c.tensor_elements(t.name, c.complete_dims(d)));
    return m;
  };
  // From the largest regular case (a realistic shape, not a one-column matrix) of the base family.
  const auto all = c.correctness_cases(wide, 1, false);
  contract::CaseSpec cs = all.front();
  for (const auto& k : all)
    if (k.offset_elements == 0 && k.dtype == cs.dtype && largest(k.dims) > largest(cs.dims)) cs = k;
  contract::Dims given;
  for (const auto& n : c.given_dims()) given[n] = cs.dims.at(n);
  // Grow the given axes, outermost first, until the largest tensor reaches the target.
  for (const auto& n : c.given_dims()) {
    const std::int64_t have = largest(given);
    if (have >= elements) break;
    given[n] = given[n] * ((elements + have - 1) / have);
    while (largest(given) > elements && given[n] > 1) --given[n];
    if (largest(given) < elements) ++given[n];
    if (!c.validate(c.request(cs.dtype, c.complete_dims(given)), wide)) break;
  }
  cs.dims = c.complete_dims(given);
  cs.family = "base";
  cs.id = fmt::format("{}/{}/base (timing)", to_string(cs.dtype), contract::format_dims(cs.dims));
  using clk = std::chrono::steady_clock;
  auto ms = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  (void)c.reference(c.make_case_in(c.correctness_cases(wide, 1, false).front(), host), host);  // the process started, the check done
  const auto t0 = clk::now();
  contract::CaseData d = c.make_case_in(cs, host);  // a [generator] runs in the started process
  const auto t1 = clk::now();
  auto want = c.reference(d, host);
  const auto t2 = clk::now();
  return {{"case", cs.id}, {"elements", largest(given)}, {"generate_ms", ms(t0, t1)}, {"reference_ms", ms(t1, t2)}};
}

json describe(const contract::Contract& c, const std::string& kind) {
  json dtypes = json::array();
  for (DType t : c.dtypes()) dtypes.push_back(std::string(to_string(t)));
  json j{{"name", c.name()}, {"kind", kind}, {"summary", c.summary()}, {"dims", c.given_dims()}, {"dtypes", dtypes}};
  if (auto f = contract::declared_file(c); !f.empty()) {
    j["file"] = f.string();
    // A manifest names a declared contract by its folder (<name>/contract.toml) or file (<name>.toml):
    // where that differs from the name the contract gives itself, the listing says which word to use.
    const std::string by = f.filename() == "contract.toml" ? f.parent_path().filename().string() : f.stem().string();
    if (by != c.name()) j["named_as"] = by;
  }
  return j;
}

int run_contracts(const ContractsOptions& o, const GlobalOptions& g) {
  json out = json::array();
  int bad = 0, not_run = 0;
  contract::ReferenceHost host;
  for (const auto& n : contract::contract_names()) out.push_back(describe(contract::find_contract(n), "built-in"));
  // With --verify, one line on stderr as each declared contract ends, so that a caller that stops
  // this run (bench/verify-imports past its limit) keeps what was verified before.
  auto progress = [&](const std::filesystem::path& f, std::chrono::steady_clock::time_point t0, const std::string& error) {
    if (!o.verify || g.quiet) return;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (error.empty()) fmt::print(stderr, "kqual contracts: verified {} in {:.0f} ms\n", f.string(), ms);
    else {
      std::string one = error.substr(0, 2000);  // the whole message on one line
      std::replace(one.begin(), one.end(), '\n', ' ');
      fmt::print(stderr, "kqual contracts: failed {} in {:.0f} ms: {}\n", f.string(), ms, one);
    }
    std::fflush(stderr);
  };
  const contract::ContractLookup lookup;  // the project's folder and $KQUAL_CONTRACTS; --dir's come first
  for (const auto& f : lookup.discover(o.dirs)) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const contract::Contract& c = contract::load_declared_contract(f);
      json j = describe(c, "declared");
      if (o.verify) {
        contract::Supports wide;
        wide.dtypes = c.dtypes();
        wide.min_alignment_bytes = 1;
        wide.max_n = contract::kUnlimited;
        auto cases = c.correctness_cases(wide, 1, false);
        if (cases.empty()) throw_error(ErrorKind::input, fmt::format("{}: no correctness case can be generated", f.string()));
        (void)c.reference(c.make_case_in(cases.front(), host), host);  // the non-triviality check runs first
        j["verified"] = fmt::format("reference ran on {} ({} cases for the widest claims)", cases.front().id, cases.size());
      }
      if (o.time_elements > 0) j["timing"] = time_reference(c, o.time_elements, host);
      progress(f, t0, "");
      out.push_back(j);
    } catch (const Error& e) {
      progress(f, t0, e.what());
      if (o.verify && contract::needs_pytorch_here(e)) {  // not wrong: not run here
        ++not_run;
        out.push_back({{"file", f.string()}, {"kind", "declared"}, {"not_verified", e.what()}});
        continue;
      }
      ++bad;
      out.push_back({{"file", f.string()}, {"kind", "declared"}, {"error", e.what()}});
    }
  }
  // No project contracts found (a kqual binary copied away from its tree, without KQUAL_HOME): said at once.
  const auto roots = lookup.roots();
  const bool no_project = std::none_of(roots.begin(), roots.end(), [](const contract::ContractRoot& r) { return r.origin == contract::ContractOrigin::project; });
  if (g.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    if (no_project)
      fmt::print(stderr, "kqual: no contracts/ folder found (KQUAL_HOME unset, none above {} or in a share/kqual there): only the "
                         "built-in contracts and those of --dir are listed; install kqual with cmake --install (README) or set KQUAL_HOME "
                         "to the repository\n",
                 self_executable() ? self_executable()->parent_path().string() : std::string("the executable"));
    for (const auto& j : out) {
      if (j.contains("error")) {
        fmt::print("{:<20} {:<9} INVALID: {}\n", "?", "declared", j["error"].get<std::string>());
        continue;
      }
      if (j.contains("not_verified")) {
        fmt::print("{:<20} {:<9} NOT VERIFIED HERE: {}\n", "?", "declared", j["not_verified"].get<std::string>());
        continue;
      }
      fmt::print("{:<20} {:<9} {} [{}; {}]\n", j["name"].get<std::string>(), j["kind"].get<std::string>(),
                 j["summary"].get<std::string>(), fmt::join(j["dims"].get<std::vector<std::string>>(), ", "),
                 fmt::join(j["dtypes"].get<std::vector<std::string>>(), ", "));
      if (j.contains("file")) fmt::print("{:<31}{}\n", "", j["file"].get<std::string>());
      if (j.contains("named_as"))
        fmt::print("{:<31}a manifest names it contract = \"{}\" (its {}; the name it gives itself, {}, finds nothing)\n", "",
                   j["named_as"].get<std::string>(), j["file"].get<std::string>().ends_with("contract.toml") ? "folder" : "file",
                   j["name"].get<std::string>());
      if (j.contains("verified")) fmt::print("{:<31}{}\n", "", j["verified"].get<std::string>());
      if (j.contains("timing"))
        fmt::print("{:<31}{}: {} elements, inputs generated in {:.0f} ms, reference (Python process, float64) in {:.0f} ms\n", "",
                   j["timing"]["case"].get<std::string>(), j["timing"]["elements"].get<std::int64_t>(),
                   j["timing"]["generate_ms"].get<double>(), j["timing"]["reference_ms"].get<double>());
    }
  }
  return bad ? kExitInputError : not_run ? kExitIncomplete : kExitPass;
}

}  // namespace

void add_contracts_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto opts = std::make_shared<ContractsOptions>();
  CLI::App* cmd = app.add_subcommand("contracts", "List the contracts a manifest can name: built-in and declared (contract.toml in "
                                                  "contracts/ folders, $KQUAL_CONTRACTS, --dir); exit 2 if a declared one is invalid");
  add_quiet_flag(cmd, g);
  input_path(cmd->add_option("--dir", opts->dirs, "Also look in this folder for <name>/contract.toml and <name>.toml (repeatable)"),
             PathRole::folder, "a folder of declared contracts");
  cmd->add_flag("--verify", opts->verify, "Run each declared contract's reference on its first case (non-triviality check included)");
  cmd->add_option("--time-reference", opts->time_elements,
                  "Time each declared contract's inputs and reference on one case of about this many elements (bench/declared-reference.sh)");
  cmd->add_option("--cases", opts->cases, "List the correctness cases this contract generates (the IDs kqual check --case takes)");
  cmd->add_option("--dtype", opts->dtype, "With --cases: only this dtype's");
  cmd->add_option("--family", opts->family, "With --cases: only this value family's");
  cmd->callback([opts, &g, exit_code] {
    if (opts->cases.empty() && (!opts->dtype.empty() || !opts->family.empty()))
      throw_error(ErrorKind::usage, "--dtype and --family narrow --cases NAME: give the contract whose cases to list");
    *exit_code = opts->cases.empty() ? run_contracts(*opts, g) : list_cases(*opts, g);
  });
}

}  // namespace kqual::run
