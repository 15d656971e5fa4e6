# The library's modules and the modules each one may use — the architecture in one place
# (docs/architecture.md draws it). One static library per module, linked PUBLIC to exactly the
# modules listed; tests/architecture checks that no source or header includes a module it does not
# list, so an upward or sideways include fails CI.
#
# Layers, bottom to top: core · stats model artifact contract cuda · import decision · startup ·
# worker · build · check · bench · report · pipeline · run (the CLI).
set(KQUAL_MODULES core stats model artifact contract cuda import decision startup worker build check bench report pipeline run)
set(KQUAL_DEPS_core "")
set(KQUAL_DEPS_stats core)
set(KQUAL_DEPS_model core)
set(KQUAL_DEPS_artifact core)
set(KQUAL_DEPS_contract core)
set(KQUAL_DEPS_cuda core)
# The importers: another benchmark's problem (a Definition, a KernelBench module) -> a declared contract folder.
set(KQUAL_DEPS_import core contract)
set(KQUAL_DEPS_decision core model stats)
set(KQUAL_DEPS_startup core cuda stats)
set(KQUAL_DEPS_worker core cuda stats)
set(KQUAL_DEPS_build core artifact contract cuda)
set(KQUAL_DEPS_check core contract cuda stats build worker)
set(KQUAL_DEPS_bench core contract cuda stats build worker check)
set(KQUAL_DEPS_report core cuda stats decision bench)
set(KQUAL_DEPS_pipeline core artifact bench build check contract decision import model report startup stats worker)
set(KQUAL_DEPS_run core stats model artifact contract cuda import decision startup worker build check bench report pipeline)

# Rooms: subfolders of a module (src/<module>/<room>/, include/kqual/<module>/<room>/) compiled into
# that module, each using the module's top level and only the rooms of the same module listed for it
# (KQUAL_ROOM_DEPS_<module>_<room>; "top" is the module's own folder). tests/architecture checks these
# too. contract/: the interface, domain and registry at the top; the built-in operations and the declared
# contracts (contract.toml + Python reference) each in a room of their own. The registry finds declared
# contracts by name; an importer (module import) writes one.
set(KQUAL_ROOMS_contract builtin declared)
set(KQUAL_ROOM_DEPS_contract_top declared)
set(KQUAL_ROOM_DEPS_contract_builtin "")
set(KQUAL_ROOM_DEPS_contract_declared "")
# pipeline/: the phases every command composes (phases, decide, qualify, selftest, the build pool) at the
# top; compare (two kernels judged per shape and profile), screen (many candidates across GPU lanes,
# journals, shards, Slurm) and replay (a recorded failing case as a reproducer folder) each in a room of
# their own, using the top level and not each other.
set(KQUAL_ROOMS_pipeline compare screen replay)
set(KQUAL_ROOM_DEPS_pipeline_top "")
set(KQUAL_ROOM_DEPS_pipeline_compare "")
set(KQUAL_ROOM_DEPS_pipeline_screen "")
set(KQUAL_ROOM_DEPS_pipeline_replay "")

# kqual_add_modules(): the kqual_<module> targets, and kqual_lib (kqual::kqual) linking them all.
function(kqual_add_modules)
  foreach(m ${KQUAL_MODULES})
    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${m}/*.cpp)  # rooms included
    if(m STREQUAL "core")
      list(APPEND srcs ${KQUAL_GITREV_SOURCE})
      # The commit stamp changes with every commit, and fmt's compiled part defines what its
      # headers only declare: each stays a translation unit of its own.
      set_source_files_properties(${KQUAL_GITREV_SOURCE} ${PROJECT_SOURCE_DIR}/src/core/fmt_compiled.cpp
                                  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    add_library(kqual_${m} STATIC ${srcs})
    add_library(kqual::${m} ALIAS kqual_${m})
    # Unity build (KQUAL_UNITY, on by default): a module's sources compiled in batches of 8, so the
    # standard, json and fmt headers are parsed once per batch, not once per file (a clean build on
    # CI's 2 cores is dominated by that). File-local names must therefore differ across a module.
    set_target_properties(kqual_${m} PROPERTIES UNITY_BUILD ${KQUAL_UNITY} UNITY_BUILD_BATCH_SIZE 8)
    target_include_directories(kqual_${m} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(kqual_${m} PRIVATE kqual::warnings)
    foreach(d ${KQUAL_DEPS_${m}})
      target_link_libraries(kqual_${m} PUBLIC kqual_${d})
    endforeach()
  endforeach()
  # What every module sees: third-party headers, the CUDA headers (types only: the driver is
  # dlopen'ed), NVRTC, threads, dl, and the build's facts.
  target_include_directories(kqual_core SYSTEM PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(kqual_core PUBLIC kqual_thirdparty CUDA::nvrtc Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_definitions(kqual_core PUBLIC
    KQUAL_DEFAULT_ARCH="${KQUAL_DEFAULT_ARCH}"
    KQUAL_CUDA_INCLUDE_DIR="${CUDAToolkit_INCLUDE_DIRS}"
    KQUAL_VERSION="${PROJECT_VERSION}")
  add_dependencies(kqual_core kqual_gitrev)

  add_library(kqual_lib INTERFACE)
  add_library(kqual::kqual ALIAS kqual_lib)
  foreach(m ${KQUAL_MODULES})
    target_link_libraries(kqual_lib INTERFACE kqual_${m})
  endforeach()
endfunction()
