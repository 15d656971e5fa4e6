#pragma once
// Shared helpers for the artifact tests: fixture paths and the `nvcc -Xptxas -v` oracle.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace kqual::artifact::test {

inline std::string fixture(const std::string& name) { return std::string(KQUAL_ARTIFACT_FIXTURES) + "/" + name; }

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing fixture " << path;
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// What ptxas printed for one kernel on one arch.
struct PtxasFacts {
  int registers = -1;
  long smem = 0;        // [B] "N bytes smem" (absent = 0)
  long stack = 0;       // [B] "N bytes stack frame"
};

// Parses `ptxas -v` output: "Compiling entry function 'K' for 'sm_90'", then the frame line and
// the "Used R registers, ..., S bytes smem" line. Key: {arch, kernel}.
inline std::map<std::pair<std::string, std::string>, PtxasFacts> parse_ptxas_log(const std::string& path) {
  std::map<std::pair<std::string, std::string>, PtxasFacts> out;
  std::istringstream in(read_text(path));
  const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9]+[af]?)')");
  const std::regex frame(R"((\d+) bytes stack frame)");
  const std::regex used(R"(Used (\d+) registers)");
  const std::regex smem(R"((\d+) bytes smem)");
  std::pair<std::string, std::string> cur;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      cur = {m[2], m[1]};
      out[cur] = PtxasFacts{};
    } else if (!cur.second.empty() && std::regex_search(line, m, frame)) {
      out[cur].stack = std::stol(m[1]);
    } else if (!cur.second.empty() && std::regex_search(line, m, used)) {
      out[cur].registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) out[cur].smem = std::stol(m[1]);
    }
  }
  return out;
}

}  // namespace kqual::artifact::test
