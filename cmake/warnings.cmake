add_library(kqual_warnings INTERFACE)
add_library(kqual::warnings ALIAS kqual_warnings)
target_compile_options(kqual_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion-null
  -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual)
if(KQUAL_ASAN)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
