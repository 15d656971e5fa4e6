#include "kqual/core/jit_cache.hpp"

#include "kqual/core/enum_names.hpp"

namespace kqual {

namespace {
constexpr EnumNames<CacheMode, 3> kCacheModeNames{
    {{{CacheMode::off, "off"}, {CacheMode::cold, "cold"}, {CacheMode::warm, "warm"}}}};
}  // namespace

const char* to_string(CacheMode m) { return kCacheModeNames.name(m, "?"); }

std::optional<CacheMode> cache_mode_from_string(std::string_view s) { return kCacheModeNames.parse(s); }

}  // namespace kqual
