#pragma once
// Reading a contract.toml's tables (declared_spec_read.cpp), shared by parse_spec (declared_spec.cpp)
// and the layout keys (declared_spec_layout.cpp): every error names the file, the key and the value
// (TomlContext, toml_value_text and check_keys from core/toml_read.hpp, as the kqual.toml manifests use).
#include <fmt/format.h>

#include <filesystem>
#include <initializer_list>
#include <set>
#include <string>
#include <toml++/toml.h>
#include <utility>
#include <vector>

#include "declared_spec.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/toml_read.hpp"

namespace kqual::contract::declared::read {

const toml::table& table_at(const TomlContext& cx, const toml::node* n, const std::string& key);
std::string str(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, bool required, std::string def = {});
double num(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, double def);
std::int64_t integer(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, std::int64_t def);
bool boolean(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, bool def);
DType dtype_of(const TomlContext& cx, const std::string& key, const std::string& text, bool allow_int = true);
// An integer or an expression over `names` (an unknown name is an error naming it).
Expr expr_of(const TomlContext& cx, const std::string& key, const toml::node& n, const std::set<std::string>& names);
// A table's entries in the order the file declares them (toml++ keeps keys sorted).
std::vector<std::pair<std::string, const toml::node*>> in_file_order(const toml::table& t);
bool is_int(DType t);

// Applies the keys of `t` over `v` (a tensor's values, or a family's overrides of them).
void read_values(const TomlContext& cx, const toml::table& t, const std::string& where, Values& v, const Spec& s);
ErrorModel read_error(const TomlContext& cx, const toml::table& t, const std::string& where, const Spec& s);
// "rows=4096,cols=4096": every variable axis, and optionally row-stride axes.
Dims parse_dims_text(const TomlContext& cx, const std::string& key, const std::string& text, const Spec& s);
CudaReference read_cuda(const TomlContext& cx, const toml::table& t, const Spec& s, const std::set<std::string>& axes);

// A tensor's layout keys (layout, stride, stride_multiple_of; declared_spec_layout.cpp): sets
// td.layout, and for a strided one its row-stride axis, added to s.axes and `known` the first time
// a tensor names it.
void read_layout(const TomlContext& cx, const toml::table& t, const std::string& where, TensorDef& td, Spec& s, std::set<std::string>& known);
// [generator] (declared_generated.cpp): its file, function and kind, and what the inputs it makes
// may be (every input with source = "generator" needs it, and it needs one such input); unique
// indices imply the constraint that a row fits in their axis.
void read_generator(const TomlContext& cx, const toml::table& root, Spec& s);
// What a strided tensor allows or forbids elsewhere in the file (aliasing, index_cases).
void check_layouts(const TomlContext& cx, const Spec& s);

}  // namespace kqual::contract::declared::read
