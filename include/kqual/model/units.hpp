#pragma once
// Parsing and printing of the quantities the models take from the command line. Every parser
// throws Error(usage) naming the flag and the offending value, so the CLI can pass errors through.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kqual::model {

// "70ms", "12us", "12µs", "0.5s", "250ns" → seconds. A bare number is refused (units are not guessed).
double parse_duration(std::string_view flag, std::string_view text);
// "3.2e9", "4.8T", "4.8TB/s", "64Ki", "67TFLOP/s" → plain number. SI prefixes k M G T P are powers of
// 1000, Ki Mi Gi Ti powers of 1024; an optional unit tail B, B/s, FLOP, FLOP/s or FLOPS is ignored.
double parse_quantity(std::string_view flag, std::string_view text);
// "0.3" or "30%" → 0.3.
double parse_fraction(std::string_view flag, std::string_view text);
// "3,0,2,1,0,4" → {3,0,2,1,0,4}; whitespace around elements allowed; negative values refused.
std::vector<std::int64_t> parse_count_list(std::string_view flag, std::string_view text);
// "1,2.5,-3" → doubles ("inf"/"-inf" allowed for softmax inputs).
std::vector<double> parse_real_list(std::string_view flag, std::string_view text);
// "1536x1024x8192" or "1536,1024,8192" → exactly `count` positive integers.
std::vector<std::int64_t> parse_dims(std::string_view flag, std::string_view text, std::size_t count);

// Human formatting with units: "1.50 ms", "4.80 TB/s", "537 MFLOP", "12.6 MB". Durations take
// the unit a reader expects for their size: ns, us, ms, s, then min, h and days (never "2.21e+05 s").
std::string format_seconds(double s);
// An estimate and its interval in one unit, with as many decimals as it takes for the interval's
// width to show (at least two significant digits of it): {"61.39 h", "61.38 h", "61.40 h"}.
struct SecondsTriple {
  std::string point, lo, hi;
};
SecondsTriple format_seconds_interval(double point, double lo, double hi);
std::string format_si(double value, std::string_view unit, int digits = 3);
std::string format_percent(double fraction, int decimals = 1);  // 0.6 → "60.0 %"
std::string format_count(double calls);                          // 5833.3 → "5,834" (rounded up)

}  // namespace kqual::model
