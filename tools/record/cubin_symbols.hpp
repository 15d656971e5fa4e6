#pragma once
// The global functions a cubin defines, read from its ELF symbol table: which kernels a module the
// recorder saw loaded holds (its 'O' lines), so kqual can tell whose a kernel is by the module it came from.
#include <cstddef>
#include <string>

namespace kqual_record {

// The global functions a cubin defines (STT_FUNC, STB_GLOBAL), ';'-joined; "-" for more than 64, or for an
// image that is not an ELF cubin (a fatbin, compressed).
std::string cubin_functions(const char* image, std::size_t size);

}  // namespace kqual_record
