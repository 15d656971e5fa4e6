// A Definition's domain (import_definition_parts.hpp): whether axis values lie inside its derived axes
// and constraints, and the base shape settled inside them.
#include <fmt/format.h>

#include <algorithm>

#include "import_definition_parts.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

namespace {

using AxisValues = std::map<std::string, std::int64_t>;
using Named = std::vector<std::pair<std::string, Expr>>;

// The constraints of the form "X == E" with X a var axis (either side): X and E, parsed.
std::vector<std::pair<std::string, Expr>> base_equalities(const std::vector<std::string>& var_axes, const Named& constraints) {
  std::vector<std::pair<std::string, Expr>> eqs;
  for (const auto& [text, whole] : constraints) {
    const std::string t = kqual_expr_text(text);
    const auto at = t.find("==");
    if (at == std::string::npos || t.find("==", at + 2) != std::string::npos || t.find("&&") != std::string::npos ||
        t.find("||") != std::string::npos)
      continue;
    auto strip = [](std::string s) {
      const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    const std::string lhs = strip(t.substr(0, at)), rhs = strip(t.substr(at + 2));
    for (const auto& [x, e] : {std::pair{lhs, rhs}, {rhs, lhs}})
      if (std::find(var_axes.begin(), var_axes.end(), x) != var_axes.end()) try {
          eqs.push_back({x, Expr::parse(e)});
        } catch (const Error&) {
        }
  }
  return eqs;
}

// `v` with each equality's axis set to its expression's value, repeated until nothing changes (a
// chain a == b + 1, b == 2 * c settles in two passes); a value outside [1, 2^31 - 1] is not set.
AxisValues settle_equalities(AxisValues v, const std::vector<std::pair<std::string, Expr>>& eqs, const Named& derived) {
  for (std::size_t pass = 0; pass <= eqs.size(); ++pass) {
    bool changed = false;
    for (const auto& [x, e] : eqs) {
      AxisValues all = v;
      std::int64_t want = 0;
      try {
        for (const auto& [n, d] : derived) all[n] = d.eval(all);
        want = e.eval(all);
      } catch (const Error&) {
        continue;
      }
      if (want >= 1 && want <= 2147483647 && v[x] != want) v[x] = want, changed = true;
    }
    if (!changed) break;
  }
  return v;
}

}  // namespace

std::string outside_domain(AxisValues v, const Named& derived, const Named& constraints) {
  try {
    for (const auto& [n, e] : derived)
      if ((v[n] = e.eval(v)) < 1) return fmt::format("axis {} is {}", n, v[n]);
    for (const auto& [text, e] : constraints)
      if (e.eval(v) == 0) return fmt::format("the Definition's constraint \"{}\" is false", text);
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

void settle_base(const fs::path& f, AxisValues& axis_value, const std::vector<std::string>& var_axes, const Named& derived,
                 const Named& constraints, const std::vector<AxisValues>& workload_shapes, std::vector<std::string>& notes) {
  const std::string why = outside_domain(axis_value, derived, constraints);
  if (why.empty()) return;
  auto text = [&](const AxisValues& v) {
    std::vector<std::string> parts;
    for (const auto& a : var_axes) parts.push_back(fmt::format("{}={}", a, v.at(a)));
    return fmt::format("{}", fmt::join(parts, ","));
  };
  // In order: the bases chosen with the constraints' equalities applied to them (len_indptr ==
  // batch_size + 1 sets len_indptr from batch_size); each workload's shape; every var axis at one
  // value, 1 to 256 then powers of two (n % 128 == 0), also with the equalities applied.
  const auto eqs = base_equalities(var_axes, constraints);
  std::vector<std::pair<AxisValues, const char*>> tries = {{settle_equalities(axis_value, eqs, derived), " (the constraints' equalities applied)"}};
  for (const auto& w : workload_shapes) {
    AxisValues v = axis_value;
    for (const auto& [a, x] : w) v[a] = x;
    tries.push_back({v, " (a workload's shape)"});
  }
  for (std::int64_t x = 1; x <= (std::int64_t(1) << 20); x = x < 256 ? x + 1 : 2 * x) {
    AxisValues v = axis_value;
    for (const auto& a : var_axes) v[a] = x;
    tries.push_back({v, ""});
    if (!eqs.empty()) tries.push_back({settle_equalities(v, eqs, derived), " (the constraints' equalities applied)"});
  }
  for (auto& [v, how] : tries) {
    if (!outside_domain(v, derived, constraints).empty()) continue;
    notes.push_back(fmt::format("base shape {} breaks the domain ({}): the base is {}{}", text(axis_value), why, text(v), how));
    for (const auto& [n, e] : derived) v[n] = e.eval(v);
    axis_value = v;
    return;
  }
  throw_error(ErrorKind::input, fmt::format("{}: constraints: the base shape {} breaks the domain ({}) and neither a workload nor one "
                                            "value for every var axis up to 2^20 lies inside it: give workloads (--workloads) with a "
                                            "shape the constraints admit", f.string(), text(axis_value), why));
}

}  // namespace kqual::contract::detail
