// {fmt} compiled once, here, instead of in every translation unit (FMT_HEADER_ONLY made each of
// ~200 translation units compile fmt's implementation: about 3 s of g++ time each on CI's 2 cores).
// Debian ships fmt's headers and only a shared library; kqual's binaries must not need shared
// third-party libraries on the GPU machine, so the non-inline part of fmt is built into kqual_core:
// format-inl.h defines it when FMT_HEADER_ONLY is unset, and the templates format.h declares
// `extern template` are instantiated below for the character types kqual uses.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
