#include <gtest/gtest.h>

#include <utility>

#include "kqual/core/error.hpp"
#include "kqual/core/expr.hpp"

namespace kqual {
namespace {

std::int64_t ev(const std::string& s, std::map<std::string, std::int64_t> v = {{"n", 1000}, {"sms", 132}}) {
  return Expr::parse(s).eval(v);
}

TEST(Expr, ArithmeticAndPrecedence) {
  EXPECT_EQ(ev("1 + 2 * 3"), 7);
  EXPECT_EQ(ev("(1 + 2) * 3"), 9);
  EXPECT_EQ(ev("-4 + 10 % 3"), -3);
  EXPECT_EQ(ev("n / 3"), 333);
  EXPECT_EQ(ev("2 - 3 - 4"), -5);  // left associative
}

TEST(Expr, FunctionsAndVariables) {
  EXPECT_EQ(ev("cdiv(n, 256)"), 4);
  EXPECT_EQ(ev("cdiv(1024, 256)"), 4);
  EXPECT_EQ(ev("min(cdiv(n, 4 * 256), sms * 16)"), 1);
  EXPECT_EQ(ev("max(1, 2, 7, 3)"), 7);
  EXPECT_EQ(ev("align_up(n, 256)"), 1024);
  EXPECT_EQ(ev("min(cdiv(n, 4), sms)", {{"n", 1 << 20}, {"sms", 132}}), 132);
  auto vars = Expr::parse("min(cdiv(n, 4), sms) + n").variables();
  EXPECT_EQ(vars, (std::set<std::string>{"n", "sms"}));
}

TEST(Expr, ErrorsNameTheExpressionAndColumn) {
  auto msg = [](const std::string& s, std::map<std::string, std::int64_t> v = {{"n", 1}}) {
    try {
      Expr::parse(s).eval(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each expression, and what its error must say.
  const std::pair<const char*, const char*> errors[] = {
      {"cdiv(n,", "column 8"},
      {"n +* 2", "'n +* 2'"},
      {"foo(n, 2)", "unknown function 'foo'"},
      {"cdiv(n)", "takes 2 arguments"},
      {"m * 2", "unknown name 'm'"},
      {"n / (n - 1)", "division by zero"},
      {"9223372036854775807 + n", "overflow"},
      {"99999999999999999999", "too large"},
      {"cdiv(n, 0)", "b > 0"},
      {"", "expected a number"},
  };
  for (const auto& [expr, said] : errors) EXPECT_NE(msg(expr).find(said), std::string::npos) << expr << ": " << msg(expr);
}

}  // namespace
}  // namespace kqual

namespace kqual {
namespace {
TEST(Expr, ComparisonsAndLogic) {
  auto e = [](const std::string& s) { return Expr::parse(s).eval({{"n", 1000}, {"k", 0}}); };
  EXPECT_EQ(e("n % 8 == 0"), 1);
  EXPECT_EQ(e("n % 16 != 8"), 0);
  EXPECT_EQ(e("n < 1000 || n >= 1000"), 1);
  EXPECT_EQ(e("n <= 999"), 0);
  EXPECT_EQ(e("n > 10 && !(n > 100)"), 0);
  EXPECT_EQ(e("k > 0 && n % k == 0"), 0);  // short-circuit: no modulo by zero
  EXPECT_EQ(e("is_pow2(1024) + is_pow2(n) + is_pow2(0)"), 1);
  EXPECT_EQ(e("1 + 2 == 3"), 1);  // arithmetic binds tighter than comparison
  EXPECT_THROW(Expr::parse("n == "), Error);
  EXPECT_THROW(Expr::parse("is_pow2(n, 2)"), Error);
}
}  // namespace
}  // namespace kqual
