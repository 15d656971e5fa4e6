#include "kqual/core/expr.hpp"

#include <fmt/format.h>

#include <cctype>
#include <vector>

#include "kqual/core/error.hpp"

namespace kqual {

struct Expr::Node {
  enum Kind { num, var, neg, add, sub, mul, div, mod, call, lnot, eq, ne, lt, le, gt, ge, land, lor } kind;
  std::int64_t value = 0;
  std::string name;
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {
using NodeP = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}
  NodeP parse() {
    NodeP e = lor();
    skip();
    if (p_ != t_.size()) fail(fmt::format("unexpected '{}'", t_[p_]));
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw_error(ErrorKind::input, fmt::format("in expression '{}': {} at column {}", t_, what, p_ + 1));
  }
  void skip() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool eat(char c) {
    skip();
    if (p_ < t_.size() && t_[p_] == c) { ++p_; return true; }
    return false;
  }
  NodeP make(Expr::Node::Kind k, std::vector<NodeP> kids, std::string name = {}, std::int64_t v = 0) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = k; n->kids = std::move(kids); n->name = std::move(name); n->value = v;
    return n;
  }
  bool eat2(const char* two) {
    skip();
    if (t_.compare(p_, 2, two) == 0) { p_ += 2; return true; }
    return false;
  }
  NodeP lor() {
    NodeP l = land();
    while (eat2("||")) l = make(Expr::Node::lor, {l, land()});
    return l;
  }
  NodeP land() {
    NodeP l = cmp();
    while (eat2("&&")) l = make(Expr::Node::land, {l, cmp()});
    return l;
  }
  NodeP cmp() {
    NodeP l = expr();
    if (eat2("==")) return make(Expr::Node::eq, {l, expr()});
    if (eat2("!=")) return make(Expr::Node::ne, {l, expr()});
    if (eat2("<=")) return make(Expr::Node::le, {l, expr()});
    if (eat2(">=")) return make(Expr::Node::ge, {l, expr()});
    if (eat('<')) return make(Expr::Node::lt, {l, expr()});
    if (eat('>')) return make(Expr::Node::gt, {l, expr()});
    return l;
  }
  NodeP expr() {
    NodeP l = term();
    for (;;) {
      if (eat('+')) l = make(Expr::Node::add, {l, term()});
      else if (eat('-')) l = make(Expr::Node::sub, {l, term()});
      else return l;
    }
  }
  NodeP term() {
    NodeP l = unary();
    for (;;) {
      if (eat('*')) l = make(Expr::Node::mul, {l, unary()});
      else if (eat('/')) l = make(Expr::Node::div, {l, unary()});
      else if (eat('%')) l = make(Expr::Node::mod, {l, unary()});
      else return l;
    }
  }
  NodeP unary() {
    if (eat('-')) return make(Expr::Node::neg, {unary()});
    skip();
    if (t_.compare(p_, 2, "!=") != 0 && eat('!')) return make(Expr::Node::lnot, {unary()});
    return primary();
  }
  NodeP primary() {
    skip();
    if (p_ >= t_.size()) fail("expected a number, name or '('");
    char c = t_[p_];
    if (c == '(') {
      ++p_;
      NodeP e = lor();
      if (!eat(')')) fail("expected ')'");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t v = 0;
      while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) {
        int d = t_[p_] - '0';
        if (v > (INT64_MAX - d) / 10) fail("integer literal too large");
        v = v * 10 + d;
        ++p_;
      }
      return make(Expr::Node::num, {}, {}, v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::string name;
      while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) name += t_[p_++];
      if (eat('(')) {
        if (name != "min" && name != "max" && name != "cdiv" && name != "align_up" && name != "is_pow2")
          fail(fmt::format("unknown function '{}' (known: min, max, cdiv, align_up, is_pow2)", name));
        std::vector<NodeP> args{lor()};
        while (eat(',')) args.push_back(lor());
        if (!eat(')')) fail("expected ')' or ','");
        if (name == "is_pow2") {
          if (args.size() != 1) fail(fmt::format("is_pow2() takes 1 argument, got {}", args.size()));
          return make(Expr::Node::call, std::move(args), name);
        }
        std::size_t want = name == "min" || name == "max" ? 0 : 2;
        if ((want && args.size() != want) || args.size() < 2)
          fail(fmt::format("{}() takes {} arguments, got {}", name, want ? "2" : "at least 2", args.size()));
        return make(Expr::Node::call, std::move(args), name);
      }
      return make(Expr::Node::var, {}, name);
    }
    fail(fmt::format("unexpected '{}'", c));
  }

  const std::string& t_;
  std::size_t p_ = 0;
};

std::int64_t eval_node(const Expr::Node& n, const std::map<std::string, std::int64_t>& vars, const std::string& text) {
  auto fail = [&](const std::string& what) -> std::int64_t {
    throw_error(ErrorKind::input, fmt::format("in expression '{}': {}", text, what));
  };
  auto k = [&](int i) { return eval_node(*n.kids[std::size_t(i)], vars, text); };
  std::int64_t r = 0;
  switch (n.kind) {
    case Expr::Node::num: return n.value;
    case Expr::Node::var: {
      auto it = vars.find(n.name);
      if (it == vars.end()) {
        std::string known;
        for (const auto& [name, v] : vars) known += (known.empty() ? "" : ", ") + name;
        return fail(fmt::format("unknown name '{}' (known: {})", n.name, known));
      }
      return it->second;
    }
    case Expr::Node::neg:
      if (__builtin_sub_overflow(std::int64_t(0), k(0), &r)) return fail("overflow");
      return r;
    case Expr::Node::add:
      if (__builtin_add_overflow(k(0), k(1), &r)) return fail("overflow");
      return r;
    case Expr::Node::sub:
      if (__builtin_sub_overflow(k(0), k(1), &r)) return fail("overflow");
      return r;
    case Expr::Node::mul:
      if (__builtin_mul_overflow(k(0), k(1), &r)) return fail("overflow");
      return r;
    case Expr::Node::div: {
      std::int64_t b = k(1);
      if (b == 0) return fail("division by zero");
      return k(0) / b;
    }
    case Expr::Node::mod: {
      std::int64_t b = k(1);
      if (b == 0) return fail("modulo by zero");
      return k(0) % b;
    }
    case Expr::Node::lnot: return k(0) == 0;
    case Expr::Node::eq: return k(0) == k(1);
    case Expr::Node::ne: return k(0) != k(1);
    case Expr::Node::lt: return k(0) < k(1);
    case Expr::Node::le: return k(0) <= k(1);
    case Expr::Node::gt: return k(0) > k(1);
    case Expr::Node::ge: return k(0) >= k(1);
    case Expr::Node::land: return k(0) != 0 && k(1) != 0;  // short-circuit: "k > 0 && n % k == 0"
    case Expr::Node::lor: return k(0) != 0 || k(1) != 0;
    case Expr::Node::call: {
      if (n.name == "is_pow2") {
        const std::int64_t a = k(0);
        return a > 0 && (a & (a - 1)) == 0;
      }
      if (n.name == "min" || n.name == "max") {
        std::int64_t v = k(0);
        for (std::size_t i = 1; i < n.kids.size(); ++i) {
          std::int64_t w = eval_node(*n.kids[i], vars, text);
          v = n.name == "min" ? std::min(v, w) : std::max(v, w);
        }
        return v;
      }
      std::int64_t a = k(0), b = k(1);
      if (b <= 0) return fail(fmt::format("{}(a, b) needs b > 0, got {}", n.name, b));
      if (a < 0) return fail(fmt::format("{}(a, b) needs a >= 0, got {}", n.name, a));
      std::int64_t q = a / b + (a % b != 0);
      if (n.name == "cdiv") return q;
      if (__builtin_mul_overflow(q, b, &r)) return fail("overflow");
      return r;
    }
  }
  return fail("internal: bad node");
}

void collect(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Expr::Node::var) out.insert(n.name);
  for (const auto& k : n.kids) collect(*k, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  Parser p(e.text_);
  e.root_ = p.parse();
  return e;
}

Expr Expr::constant(std::int64_t v) {
  Expr e;
  e.text_ = std::to_string(v);
  auto n = std::make_shared<Node>();
  n->kind = Node::num;
  n->value = v;
  e.root_ = n;
  return e;
}

std::int64_t Expr::eval(const std::map<std::string, std::int64_t>& vars) const {
  if (!root_) throw_error(ErrorKind::internal, "evaluating an empty expression");
  return eval_node(*root_, vars, text_);
}

std::set<std::string> Expr::variables() const {
  std::set<std::string> s;
  if (root_) collect(*root_, s);
  return s;
}

}  // namespace kqual
