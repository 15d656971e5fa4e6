#include "kqual/decision/profile.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kqual/core/error.hpp"

namespace kqual::decision {
namespace {

[[noreturn]] void bad(const std::string& src, const std::string& key, const std::string& what) {
  throw_error(ErrorKind::input, fmt::format("deployment profile {}: key '{}': {}", src, key, what));
}

std::string describe(const toml::node& n) {
  if (auto s = n.as_string()) return '"' + s->get() + '"';
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (n.is_table()) return "a table";
  if (n.is_array()) return "an array";
  return "a date/time";
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    default: return "date/time";
  }
}

double number(const std::string& src, const std::string& key, const toml::node& n) {
  double v = 0;
  if (auto i = n.as_integer()) v = double(i->get());
  else if (auto f = n.as_floating_point()) v = f->get();
  else bad(src, key, fmt::format("must be a number, got {} {}", type_name(n), describe(n)));
  if (!std::isfinite(v)) bad(src, key, fmt::format("must be finite, got {}", describe(n)));
  if (v < 0) bad(src, key, fmt::format("must not be negative, got {}", describe(n)));
  return v;
}

std::string text(const std::string& src, const std::string& key, const toml::node& n) {
  if (auto s = n.as_string()) return s->get();
  bad(src, key, fmt::format("must be a string, got {} {}", type_name(n), describe(n)));
}

}  // namespace

const char* to_string(CacheMode m) {
  switch (m) {
    case CacheMode::off: return "off";
    case CacheMode::cold: return "cold";
    case CacheMode::warm: return "warm";
  }
  return "?";
}

std::optional<CacheMode> cache_mode_from_string(std::string_view s) {
  if (s == "off") return CacheMode::off;
  if (s == "cold") return CacheMode::cold;
  if (s == "warm") return CacheMode::warm;
  return std::nullopt;
}

DeploymentProfile parse_profile(std::string_view toml_text, const std::string& src) {
  toml::table t;
  try {
    t = toml::parse(toml_text, src);
  } catch (const toml::parse_error& e) {
    throw_error(ErrorKind::input, fmt::format("deployment profile {}:{}:{}: {}", src, e.source().begin.line,
                                              e.source().begin.column, e.description()));
  }
  DeploymentProfile p;
  p.source = src;
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key == "name") p.name = text(src, key, node);
    else if (key == "description") p.description = text(src, key, node);
    else if (key == "process_starts_per_day") p.process_starts_per_day = number(src, key, node);
    else if (key == "calls_per_process") p.calls_per_process = number(src, key, node);
    else if (key == "first_request_budget_ms") {
      const double v = number(src, key, node);
      if (v == 0) bad(src, key, "must be positive (leave the key out for no budget), got 0");
      p.first_request_budget_ms = v;
    } else if (key == "kernel_share") {
      const double v = number(src, key, node);
      if (v > 1) bad(src, key, fmt::format("is a share of request time and must lie in [0, 1], got {}", describe(node)));
      p.kernel_share = v;
    } else if (key == "jit_cache") {
      const std::string v = text(src, key, node);
      auto m = cache_mode_from_string(v);
      if (!m) bad(src, key, fmt::format("must be \"off\", \"cold\" or \"warm\", got \"{}\"", v));
      p.jit_cache = *m;
    } else {
      bad(src, key,
          "unknown key (known: name, description, process_starts_per_day, calls_per_process, "
          "first_request_budget_ms, kernel_share, jit_cache)");
    }
  }
  return p;
}

DeploymentProfile load_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorKind::input, fmt::format("deployment profile {}: cannot read: {}", path, std::strerror(errno)));
  std::ostringstream os;
  os << in.rdbuf();
  return parse_profile(os.str(), path);
}

json to_json(const DeploymentProfile& p) {
  json j{{"name", p.name},
         {"description", p.description},
         {"source", p.source},
         {"process_starts_per_day", p.process_starts_per_day},
         {"calls_per_process", p.calls_per_process},
         {"first_request_budget_ms", nullptr},
         {"kernel_share", p.kernel_share},
         {"jit_cache", to_string(p.jit_cache)}};
  if (p.first_request_budget_ms) j["first_request_budget_ms"] = *p.first_request_budget_ms;
  return j;
}

}  // namespace kqual::decision
