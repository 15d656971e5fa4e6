#include "kqual/model/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "kqual/core/error.hpp"

namespace kqual::model {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void bad(std::string_view flag, std::string_view text, std::string_view why) {
  throw_error(ErrorKind::usage, fmt::format("{} '{}': {}", flag, text, why));
}

// Leading floating-point number; `rest` receives what follows it. False when there is none.
bool leading_number(std::string_view text, double& value, std::string_view& rest) {
  std::string s(text);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  value = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno == ERANGE) return false;
  rest = text.substr(std::size_t(end - s.c_str()));
  return true;
}

// A comma-separated list, each item trimmed and read by parse_item (which throws for a bad one);
// `what` names the items for an empty list: "numbers (e.g. 1,2.5,-3)".
template <class T, class ParseItem>
std::vector<T> parse_list(std::string_view flag, std::string_view text, std::string_view what, ParseItem parse_item) {
  std::vector<T> out;
  std::string_view t = trim(text);
  if (t.empty()) bad(flag, text, fmt::format("is empty; give a comma-separated list of {}", what));
  std::size_t start = 0;
  while (start <= t.size()) {
    const std::size_t comma = t.find(',', start);
    out.push_back(parse_item(trim(t.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start))));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

double parse_duration(std::string_view flag, std::string_view text) {
  std::string_view t = trim(text), unit;
  double v = 0;
  if (!leading_number(t, v, unit) || !std::isfinite(v)) bad(flag, text, "is not a duration (e.g. 70ms, 12us, 0.5s)");
  unit = trim(unit);
  double scale = 0;
  if (unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") scale = 1e-6;
  else if (unit == "ns") scale = 1e-9;
  else if (unit.empty()) bad(flag, text, "has no unit; write it as e.g. 70ms, 12us, 0.5s or 250ns");
  else bad(flag, text, fmt::format("has an unknown unit '{}' (use s, ms, us or ns)", unit));
  return v * scale;
}

double parse_quantity(std::string_view flag, std::string_view text) {
  std::string_view t = trim(text), rest;
  double v = 0;
  if (!leading_number(t, v, rest) || !std::isfinite(v))
    bad(flag, text, "is not a number (e.g. 3.2e9, 4.8T, 4.8TB/s, 64Ki)");
  rest = trim(rest);
  double scale = 1;
  if (!rest.empty()) {
    const char p = rest.front();
    const bool binary = rest.size() >= 2 && rest[1] == 'i';
    int power = 0;
    switch (p) {
      case 'k': case 'K': power = 1; break;
      case 'M': power = 2; break;
      case 'G': power = 3; break;
      case 'T': power = 4; break;
      case 'P': power = 5; break;
      default: break;
    }
    if (power > 0) {
      scale = std::pow(binary ? 1024.0 : 1000.0, power);
      rest.remove_prefix(binary ? 2 : 1);
    }
  }
  if (!(rest.empty() || rest == "B" || rest == "B/s" || rest == "FLOP" || rest == "FLOP/s" || rest == "FLOPS" ||
        rest == "/s"))
    bad(flag, text, fmt::format("has an unknown suffix '{}' (use k M G T P, Ki Mi Gi Ti, then B, B/s, FLOP or FLOP/s)", rest));
  return v * scale;
}

double parse_fraction(std::string_view flag, std::string_view text) {
  std::string_view t = trim(text), rest;
  double v = 0;
  if (!leading_number(t, v, rest) || !std::isfinite(v)) bad(flag, text, "is not a fraction (e.g. 0.3 or 30%)");
  rest = trim(rest);
  if (rest == "%") v /= 100.0;
  else if (!rest.empty()) bad(flag, text, "is not a fraction (e.g. 0.3 or 30%)");
  return v;
}

std::vector<std::int64_t> parse_count_list(std::string_view flag, std::string_view text) {
  return parse_list<std::int64_t>(flag, text, "non-negative integers (e.g. 3,0,2,1,0,4)", [&](std::string_view item) {
    std::string s(item);
    char* end = nullptr;
    errno = 0;
    const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || v < 0)
      bad(flag, text, fmt::format("element '{}' is not a non-negative integer", item));
    return std::int64_t(v);
  });
}

std::vector<double> parse_real_list(std::string_view flag, std::string_view text) {
  return parse_list<double>(flag, text, "numbers (e.g. 1,2.5,-3)", [&](std::string_view item) {
    double v = 0;
    std::string_view rest;
    if (!leading_number(item, v, rest) || !trim(rest).empty() || std::isnan(v))
      bad(flag, text, fmt::format("element '{}' is not a number", item));
    return v;
  });
}

std::vector<std::int64_t> parse_dims(std::string_view flag, std::string_view text, std::size_t count) {
  std::string s(trim(text));
  for (char& c : s)
    if (c == 'x' || c == 'X') c = ',';
  std::vector<std::int64_t> v;
  try {
    v = parse_count_list(flag, s);
  } catch (const Error&) {
    bad(flag, text, fmt::format("is not {} positive integers separated by 'x' or ','", count));
  }
  if (v.size() != count) bad(flag, text, fmt::format("needs exactly {} values, got {}", count, v.size()));
  for (auto d : v)
    if (d <= 0) bad(flag, text, "every value must be positive");
  return v;
}

namespace {

struct TimeUnit {
  double seconds;  // [s] per unit
  const char* name;
};

// The unit for a duration of this size [s].
TimeUnit time_unit(double magnitude) {
  if (magnitude >= 3 * 86400.0) return {86400.0, "days"};
  if (magnitude >= 3600.0) return {3600.0, "h"};
  if (magnitude >= 60.0) return {60.0, "min"};
  if (magnitude >= 1.0) return {1.0, "s"};
  if (magnitude >= 1e-3) return {1e-3, "ms"};
  if (magnitude >= 1e-6) return {1e-6, "us"};
  return {1e-9, "ns"};
}

}  // namespace

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return s > 0 ? "infinite" : "n/a";
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  const TimeUnit u = time_unit(a);
  const double v = s / u.seconds;
  // Three significant digits, never in exponent notation (a count of days can exceed 999).
  return std::fabs(v) >= 1000 ? fmt::format("{:.0f} {}", v, u.name) : fmt::format("{:.3g} {}", v, u.name);
}

SecondsTriple format_seconds_interval(double point, double lo, double hi) {
  if (!std::isfinite(point) || !std::isfinite(lo) || !std::isfinite(hi))
    return {format_seconds(point), format_seconds(lo), format_seconds(hi)};
  const double mag = std::max({std::fabs(point), std::fabs(lo), std::fabs(hi)});
  if (mag == 0) return {"0 s", "0 s", "0 s"};
  const TimeUnit u = time_unit(mag);
  const double m = mag / u.seconds, width = std::fabs(hi - lo) / u.seconds;
  // Three significant digits of the largest value, more while the width would not show.
  int decimals = std::max(0, 2 - int(std::floor(std::log10(m))));
  if (width > 0) decimals = std::max(decimals, int(std::ceil(-std::log10(width))) + 1);
  decimals = std::min(decimals, 6);
  auto f = [&](double v) { return fmt::format("{:.{}f} {}", v / u.seconds, decimals, u.name); };
  return {f(point), f(lo), f(hi)};
}

std::string format_si(double value, std::string_view unit, int digits) {
  if (!std::isfinite(value)) return fmt::format("{} {}", value > 0 ? "infinite" : "n/a", unit);
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 1000.0 && i < 6) {
    v /= 1000.0;
    ++i;
  }
  return fmt::format("{:.{}g} {}{}", v, digits, prefixes[i], unit);
}

std::string format_percent(double fraction, int decimals) {
  return fmt::format("{:.{}f} %", fraction * 100.0, decimals);
}

std::string format_count(double calls) {
  if (!std::isfinite(calls)) return "never";
  const auto n = static_cast<unsigned long long>(std::ceil(calls));
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace kqual::model
