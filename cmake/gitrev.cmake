# The git revision is baked in at configure time and refreshed by a build step, so provenance
# blocks name the code that produced them even when the binary is carried to another machine.
set(KQUAL_GITREV_SOURCE ${CMAKE_BINARY_DIR}/generated/gitrev.cpp)
add_custom_target(kqual_gitrev
  COMMAND ${CMAKE_COMMAND} -DOUT=${KQUAL_GITREV_SOURCE} -DSRC=${PROJECT_SOURCE_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/write_gitrev.cmake
  BYPRODUCTS ${KQUAL_GITREV_SOURCE}
  COMMENT "Recording git revision")
execute_process(COMMAND ${CMAKE_COMMAND} -DOUT=${KQUAL_GITREV_SOURCE} -DSRC=${PROJECT_SOURCE_DIR}
                -P ${PROJECT_SOURCE_DIR}/cmake/write_gitrev.cmake)
