#include "kqual/build/manifest.hpp"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/toml_read.hpp"
#include "kqual/cuda/library.hpp"

namespace kqual::build {
namespace fs = std::filesystem;

std::size_t scalar_size(ScalarType t) {
  return t == ScalarType::i32 || t == ScalarType::u32 || t == ScalarType::f32 ? 4 : 8;
}

const char* to_string(Compiler c) { return c == Compiler::nvcc ? "nvcc" : "nvrtc"; }

std::vector<std::string> expression_names(const contract::Contract& c) {
  std::vector<std::string> v = c.dims();
  for (const char* s : {"sms", "esize", "l2_bytes", "max_threads"}) v.push_back(s);
  return v;
}

namespace {
std::string with_type(std::string k, DType t) {
  for (std::size_t p; (p = k.find("{T}")) != std::string::npos;) k.replace(p, 3, cxx_type(t));
  return k;
}
}  // namespace

std::vector<std::string> Manifest::library_names(DType t) const {
  std::vector<std::string> out;
  for (const auto& l : launches) {
    if (l.library.empty()) continue;
    std::string k = with_type(l.library, t);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

const contract::Contract& Manifest::resolved_contract() const {
  if (!resolved_contract_)
    throw_error(ErrorKind::internal,
                fmt::format("manifest '{}' ({}) has no resolved contract (contract value \"{}\"): a manifest made in code "
                            "must call set_contract before it is used",
                            name, file.string(), contract));
  return *resolved_contract_;
}

void Manifest::set_contract(const contract::Contract& c) {
  resolved_contract_ = &c;
  contract = c.name();
}

bool Manifest::has_kernels() const {
  return std::any_of(launches.begin(), launches.end(), [](const Launch& l) { return !l.kernel.empty(); });
}

std::vector<std::string> Manifest::kernel_names(DType t) const {
  std::vector<std::string> out;
  for (const auto& l : launches) {
    if (l.kernel.empty()) continue;
    std::string k = l.kernel;
    for (std::size_t p; (p = k.find("{T}")) != std::string::npos;) k.replace(p, 3, cxx_type(t));
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

namespace {

using Ctx = TomlContext;  // every error names the manifest, the key and what is wrong

std::string get_string(const Ctx& cx, const toml::table& t, const std::string& table_name, const std::string& key,
                       bool required, const std::string& def = {}) {
  const toml::node* n = t.get(key);
  std::string full = table_name.empty() ? key : table_name + "." + key;
  if (!n) {
    if (required) cx.fail(full, "missing (required)");
    return def;
  }
  if (!n->is_string()) cx.fail(full, fmt::format("expected a string, got {}", toml_value_text(*n)));
  return std::string(*n->value<std::string>());
}

Expr get_expr(const Ctx& cx, const toml::node* n, const std::string& key, const std::vector<std::string>& names,
              std::optional<std::int64_t> def = std::nullopt) {
  if (!n) {
    if (def) return Expr::constant(*def);
    cx.fail(key, "missing (required)");
  }
  Expr e;
  if (n->is_integer()) {
    e = Expr::constant(*n->value<std::int64_t>());
  } else if (n->is_string()) {
    try {
      e = Expr::parse(*n->value<std::string>());
    } catch (const Error& err) {
      cx.fail(key, err.what());
    }
  } else {
    cx.fail(key, fmt::format("expected an integer or an expression string, got {}", toml_value_text(*n)));
  }
  for (const auto& v : e.variables())
    if (std::find(names.begin(), names.end(), v) == names.end())
      cx.fail(key, fmt::format("expression '{}' uses unknown name '{}' (known: {})", e.text(), v, fmt::join(names, ", ")));
  return e;
}

std::array<Expr, 3> get_dim3(const Ctx& cx, const toml::node* n, const std::string& key,
                             const std::vector<std::string>& names) {
  std::array<Expr, 3> out{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
  if (!n) cx.fail(key, "missing (required)");
  if (const auto* arr = n->as_array()) {
    if (arr->empty() || arr->size() > 3) cx.fail(key, fmt::format("expected 1 to 3 entries, got {}", arr->size()));
    for (std::size_t i = 0; i < arr->size(); ++i)
      out[i] = get_expr(cx, arr->get(i), fmt::format("{}[{}]", key, i), names);
  } else {
    out[0] = get_expr(cx, n, key, names);
  }
  return out;
}

// library = "cub.exclusive_sum<{T}>": a known routine, for every claimed dtype.
const cuda::LibraryRoutine* check_library(const Ctx& cx, const std::string& key, const std::string& value,
                                          const std::vector<DType>& dtypes) {
  cuda::LibraryName n = cuda::split_library_name(value);
  const cuda::LibraryRoutine* r = cuda::find_library_routine(n.routine);
  if (!r) {
    std::vector<std::string> known;
    for (const auto& k : cuda::library_routines()) known.push_back(k.signature());
    cx.fail(key, fmt::format("unknown library routine \"{}\" (known: {})", value, fmt::join(known, "; ")));
  }
  if (value.find('<') == std::string::npos || value.back() != '>')
    cx.fail(key, fmt::format("\"{}\": give the element type, e.g. \"{}<{{T}}>\"", value, n.routine));
  auto names_of = [&] {
    std::vector<std::string> v;
    for (DType t : r->dtypes) v.push_back(std::string(to_string(t)));
    return fmt::format("{}", fmt::join(v, ", "));
  };
  if (n.type == "{T}") {
    for (DType t : dtypes)
      if (std::find(r->dtypes.begin(), r->dtypes.end(), t) == r->dtypes.end())
        cx.fail(key, fmt::format("\"{}\" with {{T}} = {}: {} supports only {}", value, to_string(t), n.routine, names_of()));
  } else {
    bool ok = false;
    for (DType t : r->dtypes) ok |= cxx_type(t) == n.type;
    if (!ok) cx.fail(key, fmt::format("\"{}\": type '{}' is not supported by {} (supports {}; or write {{T}})", value, n.type,
                                      n.routine, names_of()));
  }
  return r;
}

// A library routine's arguments: its pointers (tensors or scratch), then its scalars (dims of the
// type the routine takes).
void check_library_args(const Ctx& cx, const std::string& where, const Launch& l, const cuda::LibraryRoutine& r) {
  const std::size_t want = r.pointers.size() + r.scalars.size();
  if (l.args.size() != want)
    cx.fail(where + ".args", fmt::format("{} takes {} arguments, args lists {} (expected {})", l.library, want, l.args.size(),
                                         r.signature()));
  for (std::size_t j = 0; j < l.args.size(); ++j) {
    const LaunchArg& a = l.args[j];
    auto akey = fmt::format("{}.args[{}]", where, j);
    if (j < r.pointers.size()) {
      if (a.kind == LaunchArg::dim)
        cx.fail(akey, fmt::format("\"{}\": argument {} of {} is the pointer '{}' (a tensor or scratch buffer)", a.text, j,
                                  l.library, r.pointers[j]));
    } else {
      std::string_view meaning = r.scalars[j - r.pointers.size()];
      if (a.kind != LaunchArg::dim)
        cx.fail(akey, fmt::format("\"{}\": argument {} of {} is the integer '{}' (a dim, e.g. \"{}:{}\")", a.text, j,
                                  l.library, meaning, meaning, r.scalar_type));
      std::string ty = a.text.substr(a.text.find(':') + 1);
      if (ty != r.scalar_type)
        cx.fail(akey, fmt::format("\"{}\": {} takes '{}' as {} (write \"{}:{}\")", a.text, l.library, meaning,
                                  r.scalar_type, a.name, r.scalar_type));
    }
  }
}

// Every string value that starts with "TODO:" (a placeholder a generated manifest leaves for the
// user, e.g. kqual import-triton's), by key as the other errors name keys: "launch[0].args[2]".
void find_placeholders(const toml::node& n, const std::string& key, std::vector<std::string>& out) {
  if (const auto* s = n.as_string()) {
    if (s->get().rfind(kPlaceholderPrefix, 0) == 0) out.push_back(key);
  } else if (const auto* t = n.as_table()) {
    for (const auto& [k, v] : *t) find_placeholders(v, key.empty() ? std::string(k.str()) : key + "." + std::string(k.str()), out);
  } else if (const auto* a = n.as_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) find_placeholders(*a->get(i), fmt::format("{}[{}]", key, i), out);
  }
}

}  // namespace

namespace {

// One launch argument: a tensor or scratch pointer, a dim with its C type, or a contract scalar.
LaunchArg parse_launch_arg(Ctx& cx, const contract::Contract& contract_ref, const Manifest& m, const std::string& text,
                           const std::string& akey) {
  const contract::Contract* c = &contract_ref;
  LaunchArg a;
  a.text = text;
  auto colon = a.text.find(':');
  a.name = a.text.substr(0, colon);
  bool is_tensor = false, is_scratch = false, is_dim = false;
  for (const auto& td : c->tensors()) is_tensor |= td.name == a.name;
  for (const auto& sc : m.scratch) is_scratch |= sc.name == a.name;
  for (const auto& d : c->dims()) is_dim |= d == a.name;
  std::optional<contract::ScalarArg> scalar;
  for (const auto& sc : c->scalars())
    if (sc.name == a.name) scalar = sc;
  if (scalar) {
    // A contract scalar (eps): its value, in the type the kernel takes, fixed by the contract.
    a.kind = LaunchArg::constant;
    const std::string ty = colon == std::string::npos ? std::string(to_string(scalar->dtype)) : a.text.substr(colon + 1);
    if (ty == "f32") {
      a.type = ScalarType::f32;
      a.bits = std::int64_t(f32_bits(float(scalar->value)));
    } else if (ty == "f64") {
      a.type = ScalarType::f64;
      double v = scalar->value;
      std::memcpy(&a.bits, &v, 8);
    } else if (ty == "i32" || ty == "i64") {
      a.type = ty == "i32" ? ScalarType::i32 : ScalarType::i64;
      a.bits = std::int64_t(scalar->value);
    } else {
      cx.fail(akey, fmt::format("unknown scalar type '{}' (f32, f64, i32, i64)", ty));
    }
  } else if (is_dim) {
    a.kind = LaunchArg::dim;
    if (colon == std::string::npos)
      cx.fail(akey, fmt::format("'{}' is a dim: give its C type, e.g. \"{}:i64\" (i32, u32, i64, u64)", a.text, a.name));
    std::string ty = a.text.substr(colon + 1);
    if (ty == "i32") a.type = ScalarType::i32;
    else if (ty == "u32") a.type = ScalarType::u32;
    else if (ty == "i64") a.type = ScalarType::i64;
    else if (ty == "u64") a.type = ScalarType::u64;
    else cx.fail(akey, fmt::format("unknown scalar type '{}' (i32, u32, i64, u64)", ty));
  } else if (is_tensor || is_scratch) {
    if (colon != std::string::npos) cx.fail(akey, fmt::format("'{}': pointers take no type suffix", a.text));
    a.kind = is_tensor ? LaunchArg::tensor : LaunchArg::scratch;
  } else {
    std::vector<std::string> known;
    for (const auto& td : c->tensors()) known.push_back(td.name);
    for (const auto& sc : m.scratch) known.push_back(sc.name);
    for (const auto& d : c->dims()) known.push_back(d + ":<type>");
    for (const auto& sc : c->scalars()) known.push_back(sc.name);
    cx.fail(akey, fmt::format("'{}' is neither a tensor, a scratch buffer nor a dim of contract {} (known: {})", a.name,
                              m.contract, fmt::join(known, ", ")));
  }
  return a;
}

// [candidate]: the contract (resolved here), the name, the source or image, the compiler and its options.
void parse_candidate_table(Ctx& cx, const toml::table& root, const contract::ContractLookup& contracts, Manifest& m) {
  const toml::table* cand = root["candidate"].as_table();
  if (!cand) cx.fail("[candidate]", "missing table (required)");
  check_keys(cx, *cand, "candidate",
             {"name", "description", "contract", "source", "image", "compiler", "nvrtc_options", "nvcc_options"});
  m.contract = get_string(cx, *cand, "candidate", "contract", true);
  try {
    // a built-in name, a declared contract's name, or a path: resolved here, once
    m.set_contract(contracts.resolve(m.contract, m.dir));
  } catch (const Error& e) {
    cx.fail("candidate.contract", e.what());
  }
  m.name = get_string(cx, *cand, "candidate", "name", false, m.dir.filename().string());
  m.description = get_string(cx, *cand, "candidate", "description", false);
  // A library-only baseline has no source; whether one is needed is checked after the launches.
  auto existing_file = [&](const std::string& key) {
    std::string rel = get_string(cx, *cand, "candidate", key, false);
    if (rel.empty()) return fs::path();
    fs::path p = fs::absolute(m.dir / rel).lexically_normal();
    if (!fs::is_regular_file(p))
      cx.fail("candidate." + key, fmt::format("'{}' does not exist (looked for {})", rel, p.string()));
    return p;
  };
  m.source = existing_file("source");
  m.image = existing_file("image");
  if (!m.source.empty() && !m.image.empty())
    cx.fail("candidate", fmt::format("give either source (compiled by kqual) or image (prebuilt), not both: source = {}, "
                                     "image = {}",
                                     toml_value_text(*cand->get("source")), toml_value_text(*cand->get("image"))));
  const std::string compiler = get_string(cx, *cand, "candidate", "compiler", false, "nvrtc");
  if (compiler == "nvcc")
    m.compiler = Compiler::nvcc;
  else if (compiler != "nvrtc")
    cx.fail("candidate.compiler", fmt::format("\"{}\": expected \"nvrtc\" (the default) or \"nvcc\"", compiler));
  if (!m.image.empty())
    for (const char* k : {"compiler", "nvrtc_options", "nvcc_options"})
      if (cand->get(k))
        cx.fail(std::string("candidate.") + k, "a prebuilt image is not compiled by kqual: remove this key, or give source "
                                               "instead of image");
  if (cand->get("nvrtc_options") && m.compiler == Compiler::nvcc)
    cx.fail("candidate.nvrtc_options", "compiler = \"nvcc\" takes nvcc_options (passed to nvcc as written)");
  if (cand->get("nvcc_options") && m.compiler == Compiler::nvrtc)
    cx.fail("candidate.nvcc_options", "only for compiler = \"nvcc\" (NVRTC takes nvrtc_options)");
  auto options = [&](const char* key, std::initializer_list<const char*> banned, std::vector<std::string>& out) {
    const toml::node* o = cand->get(key);
    if (!o) return;
    const auto* arr = o->as_array();
    if (!arr) cx.fail(fmt::format("candidate.{}", key), fmt::format("expected an array of strings, got {}", toml_value_text(*o)));
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const auto* s = arr->get(i)->as_string();
      if (!s) cx.fail(fmt::format("candidate.{}[{}]", key, i), "expected a string");
      const std::string& opt = s->get();
      // The harness owns the target, the language level and what is produced; a manifest may not change them.
      for (const char* b : banned)
        if (opt == b || (opt.rfind(b, 0) == 0 && (opt[std::string_view(b).size()] == '=' || std::string_view(b).size() > 2)))
          cx.fail(fmt::format("candidate.{}[{}]", key, i), fmt::format("'{}' is set by kqual, not by a manifest", opt));
      out.push_back(opt);
    }
  };
  options("nvrtc_options", {"--gpu-architecture", "-arch", "--std", "-std"}, m.nvrtc_options);
  options("nvcc_options",
          {"--gpu-architecture", "-arch", "--gpu-code", "-code", "--generate-code", "-gencode", "--std", "-std",
           "--output-file", "-o", "--cubin", "-cubin", "--ptx", "-ptx", "--fatbin", "-fatbin", "--compile", "-c",
           "--run", "-run", "--lib", "-lib", "--shared", "-shared", "--link", "-link", "--device-c", "-dc", "-rdc",
           "--relocatable-device-code", "--preprocess", "-E", "--x", "-x", "-ccbin", "--compiler-bindir"},
          m.nvcc_options);
}

// [supports]: the dtypes, alignment, sizes and run-to-run claims, against the contract's.
void parse_supports(Ctx& cx, const toml::table& root, const contract::Contract& contract_ref, Manifest& m) {
  const contract::Contract* c = &contract_ref;
  const toml::table* sup = root["supports"].as_table();
  if (!sup) cx.fail("[supports]", "missing table (required): which dtypes, alignment and sizes the kernel claims");
  check_keys(cx, *sup, "supports", {"dtypes", "min_alignment_bytes", "max_n", "in_place", "deterministic"});
  const auto* dts = sup->get("dtypes") ? sup->get("dtypes")->as_array() : nullptr;
  if (!dts || dts->empty()) cx.fail("supports.dtypes", "missing or empty (e.g. [\"f32\", \"bf16\"])");
  for (std::size_t i = 0; i < dts->size(); ++i) {
    const auto* s = dts->get(i)->as_string();
    auto key = fmt::format("supports.dtypes[{}]", i);
    if (!s) cx.fail(key, "expected a string");
    auto t = parse_dtype(s->get());
    if (!t) cx.fail(key, fmt::format("unknown dtype '{}'", s->get()));
    auto known = c->dtypes();
    if (std::find(known.begin(), known.end(), *t) == known.end())
      cx.fail(key, fmt::format("dtype '{}' is outside contract {} (supports {})", s->get(), m.contract,
                               [&] { std::string r; for (auto k : known) r += (r.empty() ? "" : ", ") + std::string(to_string(k)); return r; }()));
    m.supports.dtypes.push_back(*t);
  }
  if (const toml::node* a = sup->get("min_alignment_bytes")) {
    auto v = a->value<std::int64_t>();
    if (!a->is_integer() || !v || *v < 1 || (*v & (*v - 1)) != 0)
      cx.fail("supports.min_alignment_bytes", fmt::format("expected a power of two >= 1, got {}", toml_value_text(*a)));
    m.supports.min_alignment_bytes = *v;
  }
  if (const toml::node* a = sup->get("max_n")) {
    auto v = a->value<std::int64_t>();
    if (!a->is_integer() || !v || *v < 1) cx.fail("supports.max_n", fmt::format("expected an integer >= 1, got {}", toml_value_text(*a)));
    m.supports.max_n = *v;
  }
  if (const toml::node* a = sup->get("in_place")) {
    if (!a->is_boolean()) cx.fail("supports.in_place", fmt::format("expected true or false, got {}", toml_value_text(*a)));
    m.supports.in_place = *a->value<bool>();
  }
  if (const toml::node* a = sup->get("deterministic")) {
    if (!a->is_boolean()) cx.fail("supports.deterministic", fmt::format("expected true or false, got {}", toml_value_text(*a)));
    m.supports.deterministic = *a->value<bool>();
    // A manifest may tighten the contract's run-to-run rule (true: a difference between two runs is a
    // rejection), never loosen it: a contract that requires bitwise reproducibility states why, and a
    // candidate that says it cannot give it (atomics) is outside that contract, for every dtype the
    // contract requires it in.
    if (!*m.supports.deterministic)
      for (DType t : m.supports.dtypes) {
        const contract::Reproducibility r = c->reproducibility(t);
        if (!r.required) continue;
        std::vector<std::string> free;  // the contract's dtypes a non-reproducible kernel may claim
        for (DType u : c->dtypes())
          if (!c->reproducibility(u).required) free.push_back(std::string(to_string(u)));
        cx.fail("supports.deterministic",
                fmt::format("false, but contract {} requires bitwise reproducible results for {} ({}); a manifest cannot "
                            "loosen a contract's rule: make the kernel reproducible (e.g. a fixed-order second pass instead "
                            "of atomics){}. Opt-out: {}",
                            m.contract, to_string(t), r.reason,
                            free.empty() ? std::string()
                                         : fmt::format(", or claim only dtypes it does not require it for ({})", fmt::join(free, ", ")),
                            r.opt_out));
      }
  }

}

// [[scratch]]: buffers the harness allocates for the kernel, sized by expressions of the dims.
void parse_scratch(Ctx& cx, const toml::table& root, const contract::Contract& contract_ref, const std::vector<std::string>& names,
                   Manifest& m) {
  const contract::Contract* c = &contract_ref;
  if (const toml::node* s = root.get("scratch")) {
    const auto* arr = s->as_array();
    if (!arr) cx.fail("scratch", "expected an array of tables ([[scratch]])");
    for (std::size_t i = 0; i < arr->size(); ++i) {
      auto where = fmt::format("scratch[{}]", i);
      const auto* t = arr->get(i)->as_table();
      if (!t) cx.fail(where, "expected a table");
      check_keys(cx, *t, where, {"name", "bytes"});
      Scratch sc;
      sc.name = get_string(cx, *t, where, "name", true);
      for (const auto& td : c->tensors())
        if (td.name == sc.name) cx.fail(where + ".name", fmt::format("'{}' is a contract tensor, not scratch", sc.name));
      sc.bytes = get_expr(cx, t->get("bytes"), where + ".bytes", names);
      m.scratch.push_back(std::move(sc));
    }
  }

}

// [[launch]]: the plan, kernel or library launches with their arguments; every output must be passed.
void parse_launches(Ctx& cx, const toml::table& root, const contract::Contract& contract_ref, const std::vector<std::string>& names,
                    ManifestUse use, Manifest& m) {
  const contract::Contract* c = &contract_ref;
  const auto* launches = root.get("launch") ? root.get("launch")->as_array() : nullptr;
  if (!launches || launches->empty()) cx.fail("launch", "missing: at least one [[launch]] table is required");
  for (std::size_t i = 0; i < launches->size(); ++i) {
    auto where = fmt::format("launch[{}]", i);
    const auto* t = launches->get(i)->as_table();
    if (!t) cx.fail(where, "expected a table");
    check_keys(cx, *t, where, {"kernel", "library", "grid", "block", "shared", "args"});
    Launch l;
    const cuda::LibraryRoutine* routine = nullptr;
    if (t->get("library")) {
      if (t->get("kernel")) cx.fail(where, "give either kernel or library, not both");
      l.library = get_string(cx, *t, where, "library", true);
      routine = check_library(cx, where + ".library", l.library, m.supports.dtypes);
      for (const char* k : {"grid", "block", "shared"})
        if (t->get(k)) cx.fail(where + "." + k, "not used by a library launch (the library chooses its own launch configuration)");
    } else {
      l.kernel = get_string(cx, *t, where, "kernel", true);
      if (l.kernel.empty()) cx.fail(where + ".kernel", "empty kernel name");
      l.grid = get_dim3(cx, t->get("grid"), where + ".grid", names);
      l.block = get_dim3(cx, t->get("block"), where + ".block", names);
      l.shared = get_expr(cx, t->get("shared"), where + ".shared", names, 0);
    }
    const auto* args = t->get("args") ? t->get("args")->as_array() : nullptr;
    if (!args) cx.fail(where + ".args", "missing: the kernel's parameters, in order (tensor names, scratch names, dim:type)");
    for (std::size_t j = 0; j < args->size(); ++j) {
      auto akey = fmt::format("{}.args[{}]", where, j);
      const auto* s = args->get(j)->as_string();
      if (!s) cx.fail(akey, "expected a string");
      l.args.push_back(parse_launch_arg(cx, *c, m, s->get(), akey));
    }
    if (routine) check_library_args(cx, where, l, *routine);
    m.launches.push_back(std::move(l));
  }
  if (m.source.empty() && m.image.empty() && m.has_kernels() && use == ManifestUse::candidate)
    cx.fail("candidate.source",
            "missing: a candidate whose launches name kernels needs source (CUDA C++ kqual compiles) or image (a prebuilt "
            "cubin, fatbin, PTX file, executable or shared library); library-only manifests, and launch plans for "
            "prebuilt artifacts given to `kqual compare --manifest`, may omit both");
  // Every output must be passed to some launch, or the candidate cannot possibly write it.
  for (const auto& td : c->tensors()) {
    bool used = false;
    for (const auto& l : m.launches)
      for (const auto& a : l.args) used |= a.kind == LaunchArg::tensor && a.name == td.name;
    if (!used && td.role == contract::Role::output)
      cx.fail("launch", fmt::format("output tensor '{}' is not passed to any launch", td.name));
  }

}

// [expect]: what a known-broken candidate must be rejected for (selftest).
void parse_expect(Ctx& cx, const toml::table& root, Manifest& m) {
  if (const toml::node* e = root.get("expect")) {
    const auto* t = e->as_table();
    if (!t) cx.fail("expect", "expected a table");
    check_keys(cx, *t, "expect", {"rejected_for", "or_rejected_for", "given_hash_slots"});
    m.expect_rejected_for = get_string(cx, *t, "expect", "rejected_for", true);
    // Codes the same defect may also surface as (e.g. a replay cache caught in correctness when
    // the allocator hands back an address it has seen, in timing otherwise).
    if (const toml::node* o = t->get("or_rejected_for")) {
      const auto* arr = o->as_array();
      if (!arr) cx.fail("expect.or_rejected_for", fmt::format("expected an array of strings, got {}", toml_value_text(*o)));
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const auto* x = arr->get(i)->as_string();
        if (!x) cx.fail(fmt::format("expect.or_rejected_for[{}]", i), "expected a string");
        m.expect_also_rejected_for.push_back(x->get());
      }
    }
    // kqual selftest hands this candidate the address of kqual's output hash slots (a stand-in for
    // a kernel that found kqual's memory); only known-broken candidates may ask.
    if (const toml::node* g = t->get("given_hash_slots")) {
      if (!g->is_boolean()) cx.fail("expect.given_hash_slots", fmt::format("expected true or false, got {}", toml_value_text(*g)));
      m.expect_given_hash_slots = g->as_boolean()->get();
    }
  }
}

}  // namespace

Manifest parse_manifest(const std::string& text, const fs::path& file, const contract::ContractLookup& contracts, ManifestUse use) {
  Ctx cx(file);
  toml::table root = parse_toml(text, file);
  // A generated manifest is refused until it is completed, before anything else is judged: the
  // placeholders are the first thing to fix, and a half-filled plan must never run.
  std::vector<std::string> todo;
  find_placeholders(root, "", todo);
  if (!todo.empty())
    throw_error(ErrorKind::input,
                fmt::format("{}: incomplete manifest: {} placeholder(s) to complete before kqual uses it: {} (each value "
                            "starting with \"{}\"; the comments in the file say what each needs)",
                            file.string(), todo.size(), fmt::join(todo, ", "), kPlaceholderPrefix));
  check_keys(cx, root, "", {"candidate", "supports", "scratch", "launch", "expect"});
  Manifest m;
  m.file = file;
  m.dir = file.parent_path();

  parse_candidate_table(cx, root, contracts, m);
  const contract::Contract& c = m.resolved_contract();
  parse_supports(cx, root, c, m);
  std::vector<std::string> names = expression_names(c);
  parse_scratch(cx, root, c, names, m);
  parse_launches(cx, root, c, names, use, m);
  parse_expect(cx, root, m);
  return m;
}

Manifest load_manifest(const fs::path& file_or_dir, const contract::ContractLookup& contracts, ManifestUse use) {
  fs::path file = file_or_dir;
  if (fs::is_directory(file)) file /= "kqual.toml";
  if (!fs::exists(file))
    throw_error(ErrorKind::input, fmt::format("{}: no candidate manifest here (expected a kqual.toml)", file.string()));
  std::ifstream in(file);
  if (!in) throw_error(ErrorKind::input, fmt::format("{}: cannot read", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_manifest(ss.str(), fs::absolute(file).lexically_normal(), contracts, use);
}

Manifest load_manifest(const fs::path& file_or_dir, ManifestUse use) { return load_manifest(file_or_dir, contract::ContractLookup{}, use); }

Manifest parse_manifest(const std::string& text, const fs::path& file, ManifestUse use) {
  return parse_manifest(text, file, contract::ContractLookup{}, use);
}

std::string manifest_contract_value(const fs::path& file_or_dir) {
  std::error_code ec;
  const fs::path file = fs::is_directory(file_or_dir, ec) ? file_or_dir / "kqual.toml" : file_or_dir;
  try {
    const toml::table t = toml::parse_file(file.string());
    if (auto v = t["candidate"]["contract"].value<std::string>()) return *v;
  } catch (const std::exception&) {
    // unreadable or not TOML: load_manifest says why
  }
  return {};
}

}  // namespace kqual::build
