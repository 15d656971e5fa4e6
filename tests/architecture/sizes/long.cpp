// Fixture of Architecture.ALongFunctionFails: checked with --function-lines 10.
namespace fixture {
const char* braces_in_a_literal() { return "{{{{ }"; }  // a literal's braces are not blocks
int long_function(int x) {
  int y = 0;
  for (int i = 0; i < x; ++i) {
    y += i;
  }
  if (y > 3) {
    y -= 3;
  }
  const char* raw = R"(} } })";
  (void)raw;
  y *= 2;
  return y;
}
}  // namespace fixture
