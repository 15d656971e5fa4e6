#pragma once
// Internal to src/report/: text escaped for HTML, shared by the page writers (html_*.cpp). Not a
// public header.
#include <string>
#include <string_view>

namespace kqual::report::detail {

inline std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace kqual::report::detail
