#pragma once
// Internal to src/report/: reading a results document for the HTML page through Node, which knows
// its path, so a field of the wrong type is reported by where it is. Not a public header.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"

namespace kqual::report::detail {

class Node {
 public:
  Node(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}
  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw_error(ErrorKind::input, path_.empty() ? what : fmt::format("{}: {}", path_, what));
  }
  void expect(bool ok, const char* wanted) const {
    if (!ok) fail(fmt::format("expected {}, found {}", wanted, j_->type_name()));
  }
  bool is_object() const { return j_->is_object(); }

  // Present and not null.
  bool has(std::string_view key) const {
    return j_->is_object() && j_->contains(key) && !j_->at(key).is_null();
  }
  Node child(std::string_view key) const {
    return Node(j_->at(key), path_.empty() ? std::string(key) : path_ + "." + std::string(key));
  }
  // A field the section cannot do without.
  Node at(std::string_view key) const {
    expect(j_->is_object(), "an object");
    if (!has(key)) fail(fmt::format("no '{}'", key));
    return child(key);
  }
  std::optional<Node> opt(std::string_view key) const {
    expect(j_->is_object(), "an object");
    if (!has(key)) return std::nullopt;
    return child(key);
  }
  std::vector<Node> items() const {
    expect(j_->is_array(), "an array");
    std::vector<Node> v;
    for (std::size_t i = 0; i < j_->size(); ++i) v.emplace_back(j_->at(i), fmt::format("{}[{}]", path_, i));
    return v;
  }
  std::vector<std::pair<std::string, Node>> members() const {
    expect(j_->is_object(), "an object");
    std::vector<std::pair<std::string, Node>> v;
    for (const auto& [k, x] : j_->items()) v.emplace_back(k, child(k));
    return v;
  }
  std::string str() const {
    expect(j_->is_string(), "a string");
    return j_->get<std::string>();
  }
  double num() const {
    expect(j_->is_number(), "a number");
    return j_->get<double>();
  }
  bool boolean() const {
    expect(j_->is_boolean(), "a boolean");
    return j_->get<bool>();
  }
  // Optional fields with a default; present with the wrong type is still an error.
  std::string text(std::string_view key, const std::string& dflt = "") const {
    auto n = opt(key);
    return n ? n->str() : dflt;
  }
  std::optional<double> number(std::string_view key) const {
    auto n = opt(key);
    return n ? std::optional<double>(n->num()) : std::nullopt;
  }
  // A scalar as text: strings as they are, numbers and booleans as JSON writes them.
  std::string scalar(std::string_view key, const std::string& dflt = "") const {
    auto n = opt(key);
    if (!n) return dflt;
    if (n->raw().is_string()) return n->raw().get<std::string>();
    n->expect(n->raw().is_number() || n->raw().is_boolean(), "a string or a number");
    return n->raw().dump();
  }

 private:
  const json* j_;
  std::string path_;
};

// A comparison as stats writes it: estimate, ci [lo, hi], verdict, reason.
struct Interval {
  double estimate = 0, lo = 0, hi = 0;
  std::string verdict, reason;
};

Interval read_interval(const Node& c);

}  // namespace kqual::report::detail
