#include "kqual/core/text.hpp"

namespace kqual {

std::string first_line(const std::string& s, std::size_t max) {
  std::string t = s.substr(0, s.find('\n'));
  if (t.size() > max) t = t.substr(0, max) + "...";
  return t;
}

}  // namespace kqual
