// The speed judgement's edges: the --margin / --regression-limit options, JSON both ways, and the
// memo's table. The rule itself is in speed.cpp.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "kqual/core/error.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/speed.hpp"

namespace kqual::decision {
namespace {

[[noreturn]] void bad_option(const std::string& option, const std::string& text, const std::string& why) {
  throw_error(ErrorKind::usage, fmt::format("{} '{}': {}", option, text, why));
}

// A number with an optional suffix; `rest` gets the suffix.
double leading_number(const std::string& option, const std::string& text, std::string& rest) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v) || v < 0) bad_option(option, text, "expected a non-negative number");
  rest = std::string(end);
  while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
  return v;
}

double seconds_of(const std::string& option, const std::string& text) {
  std::string unit;
  const double v = leading_number(option, text, unit);
  if (unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  bad_option(option, text, "the absolute part needs a unit: s, ms, us or ns (e.g. 0.5us)");
}

const json& at(const json& j, const std::string& path, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw_error(ErrorKind::input, fmt::format("{}.{}: missing", path, key));
  return j.at(key);
}
double num(const json& j, const std::string& path, const char* key) {
  const json& v = at(j, path, key);
  if (!v.is_number()) throw_error(ErrorKind::input, fmt::format("{}.{}: expected a number", path, key));
  return v.get<double>();
}
stats::Interval interval(const json& j, const std::string& path, const char* key) {
  const json& v = at(j, path, key);
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
    throw_error(ErrorKind::input, fmt::format("{}.{}: expected [lo, hi]", path, key));
  return {v[0].get<double>(), v[1].get<double>()};
}
std::string str(const json& j, const std::string& path, const char* key) {
  const json& v = at(j, path, key);
  if (!v.is_string()) throw_error(ErrorKind::input, fmt::format("{}.{}: expected a string", path, key));
  return v.get<std::string>();
}

void read_field(const json& j, const std::string& path, const char* key, double& v) { v = num(j, path, key); }
void read_field(const json& j, const std::string& path, const char* key, stats::Interval& v) { v = interval(j, path, key); }
void read_field(const json& j, const std::string& path, const char* key, bool& v) { v = at(j, path, key).get<bool>(); }

// A compared shape's measured fields by their JSON names, in the order to_json writes them: fn(name,
// field) for each. to_json writes them, speed_judgement_from_json reads them back.
template <class Shape, class Fn>
void for_each_measured_field(Shape& s, Fn&& fn) {
  fn("baseline_median_s", s.baseline_median_s);
  fn("candidate_median_s", s.candidate_median_s);
  fn("ratio", s.ratio);
  fn("ci", s.ci);
  fn("margin", s.margin);
  fn("regression_limit", s.limit);
  fn("beyond_limit", s.beyond_limit);
  fn("may_exceed_limit", s.may_exceed_limit);
}

ShapeCall shape_call_from(const std::string& word, const std::string& path) {
  if (const auto c = shape_call_from_string(word)) return *c;
  throw_error(ErrorKind::input, fmt::format("{}: unknown shape verdict '{}'", path, word));
}

}  // namespace

double parse_fraction(const std::string& option, const std::string& text) {
  std::string unit;
  const double v = leading_number(option, text, unit);
  if (unit == "%") {
    if (v >= 100) bad_option(option, text, "a percentage must be below 100 %");
    return v / 100;
  }
  if (!unit.empty()) bad_option(option, text, "expected a fraction (0.03) or a percentage (3%)");
  if (v >= 1) bad_option(option, text, "a fraction must be below 1 (write 3% or 0.03)");
  return v;
}

void parse_margin(const std::string& text, SpeedPolicy& p) {
  const auto comma = text.find(',');
  p.margin_relative = parse_fraction("--margin", text.substr(0, comma));
  if (comma != std::string::npos) p.margin_absolute_s = seconds_of("--margin", text.substr(comma + 1));
}

SpeedPolicy speed_policy(const DeploymentProfile& p, const std::string& margin, const std::string& regression_limit) {
  SpeedPolicy out;
  if (p.margin_relative) out.margin_relative = *p.margin_relative;
  if (p.margin_absolute_us) out.margin_absolute_s = *p.margin_absolute_us * 1e-6;
  if (p.regression_limit) out.regression_limit = *p.regression_limit;
  if (!margin.empty()) parse_margin(margin, out);
  if (!regression_limit.empty()) out.regression_limit = parse_fraction("--regression-limit", regression_limit);
  return out;
}

json to_json(const SpeedJudgement& j) {
  json shapes = json::array();
  for (const auto& s : j.shapes) {
    json r{{"shape", s.shape},   {"baseline", s.baseline}, {"verdict", to_string(s.call)}, {"sentence", s.sentence},
           {"calls", s.calls},   {"weight", s.weight}};
    if (s.call != ShapeCall::not_compared && s.call != ShapeCall::failed)
      for_each_measured_field(s, [&](const char* name, const auto& value) {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, stats::Interval>) r[name] = stats::to_json(value);
        else r[name] = value;
      });
    shapes.push_back(r);
  }
  json overall{{"computed", j.overall.computed}};
  if (j.overall.computed) {
    overall["ratio"] = j.overall.ratio;
    overall["ci"] = stats::to_json(j.overall.ci);
    overall["margin"] = j.overall.margin;
    overall["definition"] = "geometric mean of the shapes' candidate/baseline time ratios, each weighted by its share of the "
                            "deployment's time (calls x baseline time); CI by bootstrap over every shape's samples";
  } else {
    overall["why_not"] = j.overall.why_not;
  }
  json calls = json::object();
  for (const auto& [shape, n] : j.mix.calls) calls[shape] = n;
  return json{{"verdict", j.verdict},
              {"deciding", j.deciding},
              {"would_reverse", j.would_reverse},
              {"notes", j.notes},
              {"policy",
               {{"margin_relative", j.policy.margin_relative},
                {"margin_absolute_s", j.policy.margin_absolute_s},
                {"regression_limit", j.policy.regression_limit},
                {"confidence", j.policy.bootstrap.confidence},
                {"resamples", j.policy.bootstrap.resamples}}},
              {"mix", {{"profile", j.mix.profile}, {"from_profile", j.mix.from_profile}, {"calls", calls}}},
              {"shapes", shapes},
              {"overall", overall}};
}

SpeedJudgement speed_judgement_from_json(const json& j) {
  const std::string p = "verdict.speed";
  SpeedJudgement out;
  out.verdict = str(j, p, "verdict");
  out.deciding = str(j, p, "deciding");
  for (const auto& x : at(j, p, "would_reverse")) out.would_reverse.push_back(x.get<std::string>());
  if (j.contains("notes"))
    for (const auto& x : j.at("notes")) out.notes.push_back(x.get<std::string>());
  const json& pol = at(j, p, "policy");
  out.policy.margin_relative = num(pol, p + ".policy", "margin_relative");
  out.policy.margin_absolute_s = num(pol, p + ".policy", "margin_absolute_s");
  out.policy.regression_limit = num(pol, p + ".policy", "regression_limit");
  if (pol.contains("confidence")) out.policy.bootstrap.confidence = num(pol, p + ".policy", "confidence");
  if (pol.contains("resamples")) out.policy.bootstrap.resamples = int(num(pol, p + ".policy", "resamples"));
  const json& mix = at(j, p, "mix");
  out.mix.profile = str(mix, p + ".mix", "profile");
  out.mix.from_profile = at(mix, p + ".mix", "from_profile").get<bool>();
  for (const auto& [k, v] : at(mix, p + ".mix", "calls").items()) out.mix.calls.emplace_back(k, v.get<double>());
  std::size_t i = 0;
  for (const auto& r : at(j, p, "shapes")) {
    const std::string rp = fmt::format("{}.shapes[{}]", p, i++);
    ShapeJudgement s;
    s.shape = str(r, rp, "shape");
    s.baseline = str(r, rp, "baseline");
    s.call = shape_call_from(str(r, rp, "verdict"), rp + ".verdict");
    s.sentence = str(r, rp, "sentence");
    s.calls = num(r, rp, "calls");
    s.weight = num(r, rp, "weight");
    if (r.contains("ratio"))
      for_each_measured_field(s, [&](const char* name, auto& value) { read_field(r, rp, name, value); });
    out.shapes.push_back(std::move(s));
  }
  const json& o = at(j, p, "overall");
  out.overall.computed = at(o, p + ".overall", "computed").get<bool>();
  if (out.overall.computed) {
    out.overall.ratio = num(o, p + ".overall", "ratio");
    out.overall.ci = interval(o, p + ".overall", "ci");
    out.overall.margin = num(o, p + ".overall", "margin");
  } else if (o.contains("why_not")) {
    out.overall.why_not = str(o, p + ".overall", "why_not");
  }
  return out;
}

std::string speed_table_markdown(const SpeedJudgement& j) {
  std::string m;
  m += fmt::format("Rule (docs/decision.md): a difference counts only beyond max({:.1f} %, {:.2f} us / baseline time) per "
                   "shape, judged on the 95 % CI; no shape of the mix may be more than max({:.0f} %, the absolute margin) "
                   "slower; shapes weighted by profile '{}'{}.\n\n",
                   100 * j.policy.margin_relative, j.policy.margin_absolute_s * 1e6, 100 * j.policy.regression_limit,
                   j.mix.profile,
                   j.mix.from_profile ? " (its [[shape]] calls x the baseline's time)"
                                      : " — the default: every timed shape called equally often, weighted by its time");
  m += "| shape | baseline | baseline median | candidate median | time ratio (95 % CI) | margin | weight | verdict |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : j.shapes) {
    if (s.call == ShapeCall::not_compared || s.call == ShapeCall::failed) {
      m += fmt::format("| {} | {} | — | — | — | — | {:.1f} % | {} |\n", s.shape, s.baseline.empty() ? "—" : s.baseline,
                       100 * s.weight, s.sentence);
      continue;
    }
    m += fmt::format("| {} | {} | {:.2f} us | {:.2f} us | {:.3f} ({:.3f}–{:.3f}) | ±{:.1f} % | {:.1f} % | {}{} |\n", s.shape,
                     s.baseline, s.baseline_median_s * 1e6, s.candidate_median_s * 1e6, s.ratio, s.ci.lo, s.ci.hi,
                     100 * s.margin, 100 * s.weight, to_string(s.call), s.beyond_limit ? ", **beyond the regression limit**" : "");
  }
  if (j.overall.computed)
    m += fmt::format("| **overall** | | | | **{:.3f} ({:.3f}–{:.3f})** | ±{:.1f} % | 100 % | {} |\n", j.overall.ratio,
                     j.overall.ci.lo, j.overall.ci.hi, 100 * j.overall.margin, j.verdict);
  m += "\n**" + j.deciding + "**\n";
  for (const auto& n : j.notes) m += "\n- Note: " + n;
  if (!j.notes.empty()) m += "\n";
  return m;
}

}  // namespace kqual::decision
