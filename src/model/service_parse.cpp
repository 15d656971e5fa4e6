// What `kqual model service` reads from its command line: distributions, arrivals, rates and
// latency objectives. Every error is Error(usage) naming the flag and the value.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kqual/core/error.hpp"
#include "kqual/model/service.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model::service {
namespace {

[[noreturn]] void bad(std::string_view flag, std::string_view text, const std::string& why) {
  throw_error(ErrorKind::usage, fmt::format("{} '{}': {}", flag, text, why));
}

bool number(std::string_view text, double& v, std::string_view& rest) {
  std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno == ERANGE || !std::isfinite(v)) return false;
  rest = text.substr(std::size_t(end - s.c_str()));
  return true;
}

// The values of a samples or trace file: separated by whitespace or commas, '#' to end of line a
// comment. A bare number is in `bare_unit_s` seconds; a value may carry its own unit.
std::vector<double> read_values(std::string_view flag, const std::string& path, double bare_unit_s) {
  std::ifstream in(path);
  if (!in) bad(flag, path, fmt::format("cannot read the file: {}", std::strerror(errno)));
  std::vector<double> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      double v = 0;
      std::string_view rest;
      if (!number(w, v, rest)) bad(flag, path, fmt::format("line {}: '{}' is not a number", line_no, w));
      if (rest.empty()) {
        out.push_back(v * bare_unit_s);
      } else {
        out.push_back(parse_duration(fmt::format("{} (line {})", flag, line_no), w));
      }
    }
  }
  if (out.empty()) bad(flag, path, "the file holds no values");
  return out;
}

// "kind:rest" → {kind, rest}; no colon → {text, ""}.
std::pair<std::string_view, std::string_view> split_kind(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return {text, {}};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

}  // namespace

Distribution parse_distribution(std::string_view flag, std::string_view text) {
  const auto [kind, rest] = split_kind(text);
  Distribution d;
  d.source = std::string(text);
  if (kind == "none" && rest.empty()) return d;
  if (kind == "const" || kind == "exp") {
    if (rest.empty()) bad(flag, text, fmt::format("give a duration after '{}:', e.g. {}:10ms", kind, kind));
    d.value_s = parse_duration(flag, rest);
    if (d.value_s < 0 || (kind == "exp" && d.value_s == 0)) bad(flag, text, "the duration must be positive");
    d.kind = kind == "const" ? Distribution::Kind::constant : Distribution::Kind::exponential;
    return d;
  }
  if (kind == "file") {
    if (rest.empty()) bad(flag, text, "give a path after 'file:'");
    std::vector<double> v = read_values(flag, std::string(rest), 1e-3);
    for (double x : v)
      if (x < 0) bad(flag, text, fmt::format("sample {} is negative", x));
    const std::size_t n = v.size();
    return empirical(std::move(v), fmt::format("{} ({} samples)", text, n));
  }
  bad(flag, text, "use none, const:DURATION, exp:MEAN or file:PATH (e.g. exp:10ms)");
}

Arrivals parse_arrivals(std::string_view flag, std::string_view text) {
  const auto [kind, rest] = split_kind(text);
  Arrivals a;
  a.source = std::string(text);
  if (kind == "poisson" || kind == "gamma") {
    std::string_view rate_text = rest, burst_text;
    if (kind == "gamma") {
      const std::size_t colon = rest.find(':');
      if (colon == std::string_view::npos) bad(flag, text, "write gamma:RATE:BURSTINESS, e.g. gamma:50:0.5");
      rate_text = rest.substr(0, colon);
      burst_text = rest.substr(colon + 1);
    }
    if (rate_text.empty()) bad(flag, text, fmt::format("give a rate in requests per second, e.g. {}:50", kind));
    a.rate_per_s = parse_quantity(flag, rate_text);
    if (!(a.rate_per_s > 0)) bad(flag, text, "the rate must be > 0 requests per second");
    if (kind == "gamma") {
      double b = 0;
      std::string_view tail;
      if (!number(burst_text, b, tail) || !tail.empty() || !(b > 0))
        bad(flag, text, "the burstiness factor must be a number > 0 (1 = Poisson, below 1 burstier)");
      a.kind = Arrivals::Kind::gamma;
      a.burstiness = b;
    }
    return a;
  }
  if (kind == "trace") {
    if (rest.empty()) bad(flag, text, "give a path after 'trace:'");
    std::vector<double> t = read_values(flag, std::string(rest), 1.0);
    std::sort(t.begin(), t.end());
    const double t0 = t.front();
    for (double& x : t) x -= t0;
    if (t.size() < 2 || t.back() <= 0) bad(flag, text, "a trace needs at least two distinct timestamps");
    a.kind = Arrivals::Kind::trace;
    a.rate_per_s = double(t.size() - 1) / t.back();
    a.trace_s = std::move(t);
    return a;
  }
  bad(flag, text, "use poisson:RATE, gamma:RATE:BURSTINESS or trace:PATH (RATE in requests per second)");
}

double parse_rate(std::string_view flag, std::string_view text) {
  const std::size_t slash = text.find('/');
  double v = 0;
  std::string_view tail;
  if (slash == std::string_view::npos) {
    if (number(text, v, tail) && tail.empty() && v == 0) return 0;
    bad(flag, text, "write a rate with its period, e.g. 6/h, 0.5/s, 20000/day (or 0)");
  }
  if (!number(text.substr(0, slash), v, tail) || !tail.empty() || v < 0) bad(flag, text, "the count must be a number >= 0");
  const std::string_view per = text.substr(slash + 1);
  double period_s = 0;
  if (per == "s") period_s = 1;
  else if (per == "min") period_s = 60;
  else if (per == "h") period_s = 3600;
  else if (per == "day" || per == "d") period_s = 86400;
  else bad(flag, text, fmt::format("unknown period '{}' (use s, min, h or day)", per));
  return v / period_s;
}

Objective parse_objective(std::string_view flag, std::string_view text) {
  const std::size_t colon = text.find(':');
  const std::size_t le = text.find("<=");
  if (colon == std::string_view::npos || le == std::string_view::npos || le < colon)
    bad(flag, text, "write POPULATION:pPERCENTILE<=DURATION, e.g. first_request:p99<=400ms or all:p99.9<=50ms");
  Objective o;
  const auto pop = population_from_string(text.substr(0, colon));
  if (!pop) bad(flag, text, fmt::format("unknown population '{}' (first_request, first_k or all)", text.substr(0, colon)));
  o.population = *pop;
  std::string_view p = text.substr(colon + 1, le - colon - 1);
  if (!p.empty() && (p.front() == 'p' || p.front() == 'P')) p.remove_prefix(1);
  std::string_view tail;
  if (!number(p, o.percentile, tail) || !tail.empty() || !(o.percentile > 0 && o.percentile < 100))
    bad(flag, text, "the percentile must be a number in (0, 100), e.g. p99 or p99.9");
  o.max_s = parse_duration(flag, text.substr(le + 2));
  if (!(o.max_s > 0)) bad(flag, text, "the latency bound must be positive");
  return o;
}

}  // namespace kqual::model::service
