// Writes the results documents of tests/report/fixtures.hpp into a folder, for the browser check
// (browser_check.sh renders each with `kqual report` and looks at it in headless Chromium).
//   kqual_report_fixtures DIR
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "fixtures.hpp"
#include "kqual/core/files.hpp"

using namespace kqual;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    const fs::path scratch = dir / "static";
    auto put = [&](const char* name, const json& doc) {
      write_file_atomic(dir / (std::string(name) + ".json"), doc.dump(2) + "\n");
    };
    put("qualify", test::fixtures::qualify_gpu(scratch / "q"));
    put("qualify-rejected", test::fixtures::qualify_rejected(scratch / "r"));
    put("qualify-nogpu", test::fixtures::qualify_static(scratch / "n"));
    put("compare", test::fixtures::compare_gpu(scratch / "c"));
    put("compare-nogpu", test::fixtures::compare_static(scratch / "cn"));
    // Text from the document must stay text: a kernel, baseline and shape named like markup.
    json hostile = test::fixtures::qualify_gpu(scratch / "h");
    hostile["candidate"]["name"] = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>";
    hostile["timing"]["shapes"][0]["candidate_vs_baselines"][0]["baseline"] = "</svg><script>alert(2)</script>";
    hostile["timing"]["shapes"][1]["shape"] = "n=<b onmouseover=alert(3)>1</b>";
    hostile["verdict"]["summary"] = "\"><iframe src=https://example.com></iframe>";
    put("qualify-hostile", hostile);
    std::error_code ec;
    fs::remove_all(scratch, ec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kqual_report_fixtures: %s\n", e.what());
    return 1;
  }
  return 0;
}
