# Build checks (issue 13, item 3): a user's Release build never depends on the compiler's
# warning set (-Werror is off there by default), and the project's own code stays free of
# the warnings GCC finds only at -O3 (the Release build with -Werror turned on compiles the
# library and tune targets). Each configures a fresh tree under the build directory.
set(_rel ${CMAKE_BINARY_DIR}/release-check)
add_test(NAME build.release_defaults_to_no_werror
         COMMAND sh -c "rm -rf '${_rel}-default' && \"${CMAKE_COMMAND}\" -S '${CMAKE_SOURCE_DIR}' -B '${_rel}-default' -DCMAKE_BUILD_TYPE=Release -DTUNE_CUDA=OFF >/dev/null && grep -q '^TUNE_WERROR:BOOL=OFF$' '${_rel}-default/CMakeCache.txt' && rm -rf '${_rel}-default'")
add_test(NAME build.release_compiles_without_warnings
         COMMAND sh -c "\"${CMAKE_COMMAND}\" -S '${CMAKE_SOURCE_DIR}' -B '${_rel}' -DCMAKE_BUILD_TYPE=Release -DTUNE_CUDA=OFF -DTUNE_WERROR=ON >/dev/null && \"${CMAKE_COMMAND}\" --build '${_rel}' -j2 --target tune > '${_rel}.log' 2>&1; rc=$?; grep -E 'warning|error' '${_rel}.log'; test $rc -eq 0 && ! grep -q 'warning:' '${_rel}.log'")
set_tests_properties(build.release_defaults_to_no_werror PROPERTIES TIMEOUT 120 LABELS build)
set_tests_properties(build.release_compiles_without_warnings PROPERTIES TIMEOUT 900 LABELS "build;slow")
# The files of a module stack in layers (issue 27): no circle of calls between two files of
# the scheduler, the search, the store, the trials or the simulator
# (scripts/file_circles.py reads the objects' symbols).
find_program(TUNE_NM nm)
find_program(TUNE_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(TUNE_NM AND TUNE_SYSTEM_PYTHON)
  foreach(_lib tune_sched tune_search tune_store tune_trial tune_sim)
    add_test(NAME build.no_circle_of_files_in_${_lib}
             COMMAND ${TUNE_SYSTEM_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/file_circles.py
                     $<TARGET_OBJECTS:${_lib}> COMMAND_EXPAND_LISTS)
    set_tests_properties(build.no_circle_of_files_in_${_lib} PROPERTIES TIMEOUT 60 LABELS build)
  endforeach()
endif()
