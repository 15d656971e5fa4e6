add_library(kqual_warnings INTERFACE)
add_library(kqual::warnings ALIAS kqual_warnings)
target_compile_options(kqual_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wconversion-null
  -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual)
# Warnings as errors: on in CI (.ci/run sets KQUAL_WERROR=1 for scripts/test), off by default so a
# newer compiler's new warning does not stop a user's build.
option(KQUAL_WERROR "Treat compiler warnings as errors" OFF)
if(KQUAL_WERROR)
  target_compile_options(kqual_warnings INTERFACE -Werror)
endif()
if(KQUAL_ASAN)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
