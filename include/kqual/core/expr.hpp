#pragma once
// Integer expressions over named values: launch plans ("min(cdiv(n, 4 * 256), sms * 16)"), and the
// axes, domain constraints and cost formulas of declared contracts ("cols % 2 == 0 && rows <= 65536").
// Grammar: or := and ('||' and)*; and := cmp ('&&' cmp)*; cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?;
// sum := term (('+'|'-') term)*; term := unary (('*'|'/'|'%') unary)*; unary := ('-'|'!') unary | primary;
// primary := INT | NAME | NAME '(' or (',' or)* ')' | '(' or ')'.
// Functions: min, max, cdiv (ceiling division), align_up(a, b), is_pow2(a). Comparisons and logic
// give 1 or 0. Arithmetic is checked int64: overflow and division by zero are errors naming the
// expression.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace kqual {

class Expr {
 public:
  Expr() = default;
  // Throws Error(input) "in expression '<text>': <what> at column <c>".
  static Expr parse(const std::string& text);
  static Expr constant(std::int64_t v);
  std::int64_t eval(const std::map<std::string, std::int64_t>& vars) const;
  std::set<std::string> variables() const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace kqual

namespace kqual::build {
using kqual::Expr;  // launch plans were its first use
}  // namespace kqual::build
