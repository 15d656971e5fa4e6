// A reference that draws random numbers, found by a static read of its Python source
// (import_common.hpp). kqual judges a kernel element by element against the reference's output; a
// sampler's output is one draw, which the kernel's own draw need not match, and no statistical judge
// (a test of the distribution) is declared for imported contracts: such a reference is refused at
// import, naming the call and its line, rather than when the contract is first used.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <vector>

#include "import_common.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::detail {

namespace {

struct SamplingLine {
  int number = 0;     // 1-based, in the source
  std::string code;   // the line without its comment
};

// Calls visit(i, c) for each character of `line` outside a string literal, until visit returns false.
template <class Visit>
void sampling_code_chars(const std::string& line, Visit visit) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (!visit(i, c)) {
      return;
    }
  }
}

// `#` outside a string literal starts a comment.
std::string sampling_strip_comment(const std::string& line) {
  std::size_t cut = std::string::npos;
  sampling_code_chars(line, [&](std::size_t i, char c) {
    if (c == '#') cut = i;
    return c != '#';
  });
  return cut == std::string::npos ? line : line.substr(0, cut);
}

std::size_t sampling_indent(const std::string& line) { return line.find_first_not_of(" \t"); }

// The code lines of `src`: comments removed, lines inside a triple-quoted string (docstrings) left out.
std::vector<SamplingLine> sampling_code_lines(const std::string& src) {
  std::vector<SamplingLine> out;
  std::istringstream in(src);
  std::string line;
  bool in_doc = false;
  for (int n = 1; std::getline(in, line); ++n) {
    std::size_t triples = 0;
    for (const char* q : {"\"\"\"", "'''"})
      for (std::size_t p = line.find(q); p != std::string::npos; p = line.find(q, p + 3)) ++triples;
    if (in_doc || triples > 0) {
      if (triples % 2 == 1) in_doc = !in_doc;
      continue;
    }
    out.push_back({n, sampling_strip_comment(line)});
  }
  return out;
}

// Brackets opened minus closed on one line of code (string literals skipped).
int sampling_bracket_balance(const std::string& code) {
  int depth = 0;
  sampling_code_chars(code, [&](std::size_t, char c) {
    depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
    return true;
  });
  return depth;
}

// The lines of `function`'s body (the def line's indentation closes it). A signature written over
// several lines (`def get_inputs(\n    axes, device\n) -> dict:`) is part of the def: its lines are
// returned with the body, and its closing line does not end the function.
std::vector<SamplingLine> sampling_function_body(const std::vector<SamplingLine>& lines, const std::string& function) {
  const std::regex def("^\\s*(async\\s+)?def\\s+" + function + "\\s*\\(");
  std::vector<SamplingLine> body;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i].code, def)) continue;
    const std::size_t indent = sampling_indent(lines[i].code);
    int open = sampling_bracket_balance(lines[i].code);
    while (open > 0 && i + 1 < lines.size()) {
      body.push_back(lines[++i]);
      open += sampling_bracket_balance(lines[i].code);
    }
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      const std::size_t at = sampling_indent(lines[j].code);
      if (at == std::string::npos) continue;  // blank
      if (at <= indent) break;
      body.push_back(lines[j]);
    }
  }
  return body;
}

// The first sampler called on one line of code, shown as written ("torch.multinomial"); "".
std::string sampler_on_line(const std::string& code) {
  static const std::regex torch_call(R"(\btorch\.(rand|randn|rand_like|randn_like|randint|randint_like|randperm|multinomial|bernoulli|poisson|normal)\s*\()");
  static const std::regex method_call(
      R"(\.(multinomial|bernoulli|bernoulli_|uniform_|normal_|exponential_|geometric_|cauchy_|log_normal_|random_)\s*\()");
  static const std::regex numpy_call(R"(\b(np|numpy)\.random\.(\w+))");
  static const std::regex python_call(R"((^|[^\w.])random\.(\w+)\s*\()");
  static const std::regex dropout_call(R"(\b(F|functional|torch)\.(dropout|dropout1d|dropout2d|dropout3d|alpha_dropout|feature_alpha_dropout)\s*\()");
  static const std::regex not_training(R"(training\s*=\s*False|,\s*False\s*\)|,\s*(p\s*=\s*)?0(\.0*)?\s*[,)])");
  static const std::regex own_generator(R"(\bgenerator\s*=)");
  std::smatch m;
  if (std::regex_search(code, m, dropout_call) && !std::regex_search(code, not_training))
    return fmt::format("{}.{} in training mode", m[1].str(), m[2].str());
  if (std::regex_search(code, own_generator)) return "";
  if (std::regex_search(code, m, torch_call)) return "torch." + m[1].str();
  if (std::regex_search(code, m, numpy_call)) return fmt::format("{}.random.{}", m[1].str(), m[2].str());
  if (std::regex_search(code, m, python_call)) return "random." + m[2].str();
  if (std::regex_search(code, m, method_call)) return "." + m[1].str() + "()";
  return "";
}

// nn.Dropout with a literal p above 0 (random in training mode, as KernelBench runs the model);
// a p given by a variable is left to the capture, which runs forward twice.
std::string dropout_module_on_line(const std::string& code) {
  static const std::regex module(R"(\bnn\.(Dropout|Dropout1d|Dropout2d|Dropout3d|AlphaDropout|FeatureAlphaDropout)\s*\(\s*(p\s*=\s*)?([0-9][0-9.eE+-]*)\s*[,)])");
  std::smatch m;
  if (!std::regex_search(code, m, module)) return "";
  double p = 0;
  try {
    p = std::stod(m[3].str());
  } catch (const std::exception&) {
    return "";
  }
  return p > 0 ? fmt::format("nn.{}({}) in training mode", m[1].str(), m[3].str()) : "";
}

// The first sampler called in `calls` ("torch.randn at line 18"), else the first dropout module in
// `modules`; "" when neither has one.
std::string first_sampler(const std::vector<SamplingLine>& calls, const std::vector<SamplingLine>& modules) {
  for (const auto& l : calls)
    if (const std::string s = sampler_on_line(l.code); !s.empty()) return fmt::format("{} at line {}", s, l.number);
  for (const auto& l : modules)
    if (const std::string s = dropout_module_on_line(l.code); !s.empty()) return fmt::format("{} at line {}", s, l.number);
  return "";
}

}  // namespace

std::string sampling_call(const std::string& src, const std::string& function, const std::string& except_function) {
  std::vector<SamplingLine> lines = sampling_code_lines(src);
  if (!except_function.empty()) {
    // The function that draws the inputs (SOL-ExecBench's custom_inputs_entrypoint), its def line too.
    const std::vector<SamplingLine> body = sampling_function_body(lines, except_function);
    const std::regex def("^\\s*(async\\s+)?def\\s+" + except_function + "\\s*\\(");
    std::vector<SamplingLine> kept;
    for (const auto& l : lines)
      if (!std::regex_search(l.code, def) &&
          std::none_of(body.begin(), body.end(), [&](const SamplingLine& b) { return b.number == l.number; }))
        kept.push_back(l);
    lines = std::move(kept);
  }
  return first_sampler(function.empty() ? lines : sampling_function_body(lines, function), lines);
}

std::string sampling_call_reached(const std::string& src, const std::string& entry, const std::string& except_function) {
  const std::vector<SamplingLine> lines = sampling_code_lines(src);
  // The module's top-level functions, each with its def line and body.
  static const std::regex top_def(R"(^(async\s+)?def\s+(\w+)\s*\()");
  std::map<std::string, std::vector<SamplingLine>> defs;
  std::set<int> in_def;
  for (const auto& l : lines) {
    std::smatch m;
    if (!std::regex_search(l.code, m, top_def) || defs.count(m[2].str())) continue;
    std::vector<SamplingLine> body = sampling_function_body(lines, m[2].str());
    body.insert(body.begin(), l);
    for (const auto& b : body) in_def.insert(b.number);
    defs.emplace(m[2].str(), std::move(body));
  }
  if (!defs.count(entry)) return sampling_call(src, "", except_function);
  // Module-level code (imports, constants, class bodies) runs on import; then every top-level function
  // named from what runs, starting with `entry`. The input generator is never the reference.
  std::vector<SamplingLine> scanned;
  for (const auto& l : lines)
    if (!in_def.count(l.number)) scanned.push_back(l);
  std::set<std::string> reached;
  std::vector<std::string> todo{entry};
  static const std::regex word(R"(\b[A-Za-z_]\w*\b)");
  auto names_in = [&](const std::vector<SamplingLine>& code) {
    for (const auto& l : code)
      for (std::sregex_iterator it(l.code.begin(), l.code.end(), word), end; it != end; ++it)
        if (defs.count(it->str()) && it->str() != except_function && !reached.count(it->str())) todo.push_back(it->str());
  };
  names_in(scanned);
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    if (!reached.insert(f).second) continue;
    const std::vector<SamplingLine>& body = defs.at(f);
    scanned.insert(scanned.end(), body.begin(), body.end());
    names_in(body);
  }
  std::sort(scanned.begin(), scanned.end(), [](const SamplingLine& a, const SamplingLine& b) { return a.number < b.number; });
  return first_sampler(scanned, scanned);
}

std::string sampling_refusal(const std::string& where) {
  return fmt::format("statistical operation: the reference samples ({}); no statistical judge is declared (kqual compares a kernel's "
                     "output with the reference's element by element, and a draw need not match another draw)",
                     where);
}

// A forward that samples (torch.rand in forward, dropout with a literal p in training mode) is refused
// from the problem's source, before PyTorch runs; a p given by a variable is left to the capture.
void refuse_sampling_forward(const std::filesystem::path& problem) {
  std::error_code ec;
  if (problem.empty() || !std::filesystem::is_regular_file(problem, ec)) return;
  if (const std::string where = sampling_call(read_text_file(problem), "forward"); !where.empty())
    throw_error(ErrorKind::input, fmt::format("{}: forward: {}", problem.string(), sampling_refusal(where)));
}

std::set<std::string> unread_parameters(const std::string& src, const std::string& function) {
  const std::vector<SamplingLine> lines = sampling_code_lines(src);
  const std::regex def("^\\s*(async\\s+)?def\\s+" + function + "\\s*\\(");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i].code, def)) continue;
    // The signature: from the def's '(' to its matching ')', over as many lines as it takes.
    std::string sig = lines[i].code.substr(lines[i].code.find('(') + 1);
    const std::size_t indent = sampling_indent(lines[i].code);
    std::size_t j = i;
    for (int open = sampling_bracket_balance(lines[i].code); open > 0 && j + 1 < lines.size();) {
      sig += "\n" + lines[++j].code;
      open += sampling_bracket_balance(lines[j].code);
    }
    std::set<std::string> params;
    int depth = 0;
    std::string cur;
    auto take = [&] {
      static const std::regex name(R"(^\s*(\**)\s*([A-Za-z_]\w*))");
      std::smatch m;
      if (std::regex_search(cur, m, name) && m[1].str().empty() && m[2].str() != "self") params.insert(m[2].str());
      cur.clear();
    };
    for (char c : sig) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth-- == 0) break;
      }
      if (c == ',' && depth == 0) take();
      else cur += c;
    }
    take();
    // The body: every line indented past the def. A body that reaches its arguments by name (locals(),
    // vars(), **kwargs passed on, inspect) reads what no static read sees: nothing is said unread.
    std::string body;  // string literals left out (sampling_code_chars): a name in a message is no read
    for (std::size_t k = j + 1; k < lines.size(); ++k) {
      const std::size_t at = sampling_indent(lines[k].code);
      if (at == std::string::npos) continue;
      if (at <= indent) break;
      sampling_code_chars(lines[k].code, [&](std::size_t, char c) {
        body += c;
        return true;
      });
      body += ' ';
    }
    static const std::regex dynamic(R"(\blocals\s*\(|\bvars\s*\(|\binspect\b|[(,{]\s*\*\*\s*[A-Za-z_])");
    if (std::regex_search(body, dynamic)) return {};
    static const std::regex word(R"(\b[A-Za-z_]\w*\b)");
    std::set<std::string> used;
    for (std::sregex_iterator it(body.begin(), body.end(), word), end; it != end; ++it) used.insert(it->str());
    std::set<std::string> unread;
    for (const auto& p : params)
      if (!used.count(p)) unread.insert(p);
    return unread;
  }
  return {};
}

// The problem's source without get_inputs() and get_init_inputs(): the dtypes those make inputs in
// (torch.rand(..., dtype=torch.float16)) are not casts of forward's.
std::string without_input_makers(const std::string& src) {
  std::istringstream in(src);
  std::string line, out;
  bool skipping = false;
  while (std::getline(in, line)) {
    const bool top = !line.empty() && line[0] != ' ' && line[0] != '\t';
    if (top) skipping = line.rfind("def get_inputs(", 0) == 0 || line.rfind("def get_init_inputs(", 0) == 0;
    if (!skipping) out += line + "\n";
  }
  return out;
}

}  // namespace kqual::contract::detail
