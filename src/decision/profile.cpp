#include "kqual/decision/profile.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kqual/core/enum_names.hpp"
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

bool boolean(const std::string& src, const std::string& key, const toml::node& n) {
  if (auto b = n.as_boolean()) return b->get();
  bad(src, key, fmt::format("must be true or false, got {} {}", type_name(n), describe(n)));
}

double positive(const std::string& src, const std::string& key, const toml::node& n) {
  const double v = number(src, key, n);
  if (v == 0) bad(src, key, "must be positive, got 0");
  return v;
}

int count(const std::string& src, const std::string& key, const toml::node& n) {
  const double v = positive(src, key, n);
  if (v != std::floor(v) || v > 1e6) bad(src, key, fmt::format("must be a whole number from 1 to 1000000, got {}", describe(n)));
  return int(v);
}

// The table of a [section]; an input error naming it for anything else.
const toml::table& section_table(const std::string& src, const char* section, const toml::node& node) {
  const toml::table* t = node.as_table();
  if (!t) bad(src, section, fmt::format("must be a table ([{}]), got {} {}", section, type_name(node), describe(node)));
  return *t;
}

void parse_service(const std::string& src, const toml::node& node, ServiceProfile& s) {
  for (const auto& [k, n] : section_table(src, "service", node)) {
    const std::string key = "service." + std::string(k.str());
    const std::string_view name = k.str();
    if (name == "arrival_rate") s.arrival_rate_per_s = positive(src, key, n);
    else if (name == "burstiness") s.burstiness = positive(src, key, n);
    else if (name == "replicas") s.replicas = count(src, key, n);
    else if (name == "request_time_ms") s.request_time_ms = positive(src, key, n);
    else if (name == "first_k") s.first_k = count(src, key, n);
    else if (name == "timeout_ms") s.timeout_ms = positive(src, key, n);
    else if (name == "other_startup_ms") s.other_startup_ms = number(src, key, n);
    else if (name == "driver_upgrade") s.driver_upgrade = boolean(src, key, n);
    else if (name == "preload") s.preload = boolean(src, key, n);
    else
      bad(src, key,
          "unknown key (known: arrival_rate, burstiness, replicas, request_time_ms, first_k, timeout_ms, other_startup_ms, "
          "driver_upgrade, preload)");
  }
}

// Each table of an array of tables ([[objective]], [[shape]]) with its place ("objective[2]"), for
// fn(where, table); input errors for anything else, `entry_must` saying what an entry holds.
template <class Fn>
void for_each_entry(const std::string& src, const char* name, const toml::node& node, const std::string& array_must,
                    const std::string& entry_must, Fn fn) {
  const toml::array* a = node.as_array();
  if (!a) bad(src, name, array_must);
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string where = fmt::format("{}[{}]", name, i);
    const toml::table* t = a->get(i)->as_table();
    if (!t) bad(src, where, entry_must);
    fn(where, *t);
  }
}

void parse_objectives(const std::string& src, const toml::node& node, std::vector<model::service::Objective>& out) {
  for_each_entry(src, "objective", node, "must be an array of tables ([[objective]] entries)",
                 "must be a table with population, percentile and max_ms", [&](const std::string& where, const toml::table& t) {
    model::service::Objective o;
    bool have_pop = false, have_p = false, have_max = false;
    for (const auto& [k, n] : t) {
      const std::string key = where + "." + std::string(k.str());
      if (k.str() == "population") {
        const std::string v = text(src, key, n);
        const auto p = model::service::population_from_string(v);
        if (!p) bad(src, key, fmt::format("must be \"first_request\", \"first_k\" or \"all\", got \"{}\"", v));
        o.population = *p;
        have_pop = true;
      } else if (k.str() == "percentile") {
        o.percentile = number(src, key, n);
        if (!(o.percentile > 0 && o.percentile < 100)) bad(src, key, fmt::format("must lie in (0, 100), got {}", describe(n)));
        have_p = true;
      } else if (k.str() == "max_ms") {
        o.max_s = positive(src, key, n) * 1e-3;
        have_max = true;
      } else {
        bad(src, key, "unknown key (known: population, percentile, max_ms)");
      }
    }
    if (!have_pop || !have_p || !have_max) bad(src, where, "needs population, percentile and max_ms");
    out.push_back(o);
  });
}

void parse_shapes(const std::string& src, const toml::node& node, DeploymentProfile& p) {
  for_each_entry(src, "shape", node, "must be an array of tables ([[shape]] entries with shape and calls)",
                 "must be a table with shape and calls", [&](const std::string& where, const toml::table& t) {
    std::optional<std::string> shape;
    std::optional<double> calls;
    for (const auto& [k, n] : t) {
      const std::string key = where + "." + std::string(k.str());
      if (k.str() == "shape") {
        shape = text(src, key, n);
        if (shape->empty()) bad(src, key, "must name a shape, e.g. \"n=4096\" or \"rows=4096,cols=1024\"");
      } else if (k.str() == "calls") {
        calls = number(src, key, n);
      } else {
        bad(src, key, "unknown key (known: shape, calls)");
      }
    }
    if (!shape || !calls) bad(src, where, "needs shape and calls");
    for (const auto& [other, c] : p.shape_calls)
      if (other == *shape) bad(src, where + ".shape", fmt::format("\"{}\" is listed twice", *shape));
    p.shape_calls.emplace_back(*shape, *calls);
  });
  double total = 0;
  for (const auto& [s, c] : p.shape_calls) total += c;
  if (!p.shape_calls.empty() && total <= 0) bad(src, "shape", "every listed shape has 0 calls: nothing to weigh");
}

void parse_decision(const std::string& src, const toml::node& node, DeploymentProfile& p) {
  for (const auto& [k, n] : section_table(src, "decision", node)) {
    const std::string key = "decision." + std::string(k.str());
    const std::string_view name = k.str();
    auto fraction = [&] {
      const double v = number(src, key, n);
      if (v >= 1) bad(src, key, fmt::format("is a fraction and must lie in [0, 1), got {} (write 0.03 for 3 %)", describe(n)));
      return v;
    };
    if (name == "margin") p.margin_relative = fraction();
    else if (name == "margin_us") p.margin_absolute_us = number(src, key, n);
    else if (name == "regression_limit") p.regression_limit = fraction();
    else bad(src, key, "unknown key (known: margin, margin_us, regression_limit)");
  }
}

}  // namespace

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
    } else if (key == "service") {
      parse_service(src, node, p.service);
    } else if (key == "objective") {
      parse_objectives(src, node, p.objectives);
    } else if (key == "shape") {
      parse_shapes(src, node, p);
    } else if (key == "decision") {
      parse_decision(src, node, p);
    } else {
      bad(src, key,
          "unknown key (known: name, description, process_starts_per_day, calls_per_process, "
          "first_request_budget_ms, kernel_share, jit_cache, [service], [[objective]], [[shape]], [decision])");
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

std::vector<DeploymentProfile> load_profiles_or_default(const std::vector<std::string>& paths) {
  std::vector<DeploymentProfile> ps;
  for (const auto& path : paths) ps.push_back(load_profile(path));
  if (ps.empty()) {
    DeploymentProfile d;
    d.name = "default";
    d.description = "built-in defaults (docs/statistics.md); give --profile FILE for your service";
    ps.push_back(d);
  }
  return ps;
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
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const ServiceProfile& s = p.service;
  j["service"] = {{"arrival_rate", opt(s.arrival_rate_per_s)},
                  {"burstiness", s.burstiness},
                  {"replicas", opt(s.replicas)},
                  {"request_time_ms", opt(s.request_time_ms)},
                  {"first_k", s.first_k},
                  {"timeout_ms", opt(s.timeout_ms)},
                  {"other_startup_ms", s.other_startup_ms},
                  {"driver_upgrade", s.driver_upgrade},
                  {"preload", s.preload}};
  j["objectives"] = json::array();
  for (const auto& o : p.objectives)
    j["objectives"].push_back({{"population", model::service::to_string(o.population)},
                               {"percentile", o.percentile},
                               {"max_ms", o.max_s * 1e3},
                               {"text", o.text()}});
  j["shapes"] = json::array();
  for (const auto& [shape, calls] : p.shape_calls) j["shapes"].push_back({{"shape", shape}, {"calls", calls}});
  j["decision"] = {{"margin", opt(p.margin_relative)},
                   {"margin_us", opt(p.margin_absolute_us)},
                   {"regression_limit", opt(p.regression_limit)}};
  return j;
}

DeploymentProfile profile_from_json(const json& j) {
  auto fail = [](const std::string& what) { throw_error(ErrorKind::input, "recorded profile: " + what); };
  if (!j.is_object()) fail("not an object");
  auto num = [&](const json& o, const char* k, double def) {
    if (!o.contains(k) || o.at(k).is_null()) return def;
    if (!o.at(k).is_number()) fail(std::string(k) + ": expected a number");
    return o.at(k).get<double>();
  };
  auto opt = [&](const json& o, const char* k) -> std::optional<double> {
    if (!o.contains(k) || o.at(k).is_null()) return std::nullopt;
    return num(o, k, 0);
  };
  DeploymentProfile p;
  p.name = j.value("name", p.name);
  p.description = j.value("description", std::string());
  p.source = j.value("source", std::string());
  p.process_starts_per_day = num(j, "process_starts_per_day", p.process_starts_per_day);
  p.calls_per_process = num(j, "calls_per_process", p.calls_per_process);
  p.first_request_budget_ms = opt(j, "first_request_budget_ms");
  p.kernel_share = num(j, "kernel_share", p.kernel_share);
  if (auto m = cache_mode_from_string(j.value("jit_cache", std::string("cold")))) p.jit_cache = *m;
  else fail("jit_cache: unknown mode");
  if (j.contains("service") && j.at("service").is_object()) {
    const json& s = j.at("service");
    ServiceProfile& sp = p.service;
    sp.arrival_rate_per_s = opt(s, "arrival_rate");
    sp.burstiness = num(s, "burstiness", sp.burstiness);
    if (auto r = opt(s, "replicas")) sp.replicas = int(*r);
    sp.request_time_ms = opt(s, "request_time_ms");
    sp.first_k = int(num(s, "first_k", sp.first_k));
    sp.timeout_ms = opt(s, "timeout_ms");
    sp.other_startup_ms = num(s, "other_startup_ms", 0);
    sp.driver_upgrade = s.value("driver_upgrade", false);
    sp.preload = s.value("preload", false);
  }
  if (j.contains("objectives") && j.at("objectives").is_array())
    for (const auto& o : j.at("objectives")) {
      model::service::Objective x;
      const auto pop = model::service::population_from_string(o.value("population", std::string()));
      if (!pop) fail("objectives[].population: unknown population");
      x.population = *pop;
      x.percentile = num(o, "percentile", 99);
      x.max_s = num(o, "max_ms", 0) * 1e-3;
      p.objectives.push_back(x);
    }
  if (j.contains("shapes") && j.at("shapes").is_array())
    for (const auto& s : j.at("shapes")) p.shape_calls.emplace_back(s.value("shape", std::string()), num(s, "calls", 0));
  if (j.contains("decision") && j.at("decision").is_object()) {
    const json& d = j.at("decision");
    p.margin_relative = opt(d, "margin");
    p.margin_absolute_us = opt(d, "margin_us");
    p.regression_limit = opt(d, "regression_limit");
  }
  return p;
}

}  // namespace kqual::decision
