# Slurm executor tests (tests/test_slurm.c): unit cases against fake Slurm commands run
# everywhere; end-to-end cases need a real cluster (scripts/slurm/up.sh; scripts/test.sh
# starts one when run as root) and skip without it. They share that one cluster, so they
# never run at the same time (RESOURCE_LOCK); timeouts allow for Slurm's scheduling stalls.
add_executable(slurm_rank ${CMAKE_SOURCE_DIR}/tests/progs/slurm_rank.c)
set_target_properties(slurm_rank PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                            ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_slurm SOURCES ${CMAKE_SOURCE_DIR}/tests/test_slurm.c
                  LIBS tune_trial SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB}
                  LABELS slurm TIMEOUT 300)
add_dependencies(test_slurm tune synth_trial slurm_rank tune-slurm-task)
file(STRINGS ${CMAKE_SOURCE_DIR}/tests/test_slurm.c _slurm_cases REGEX "^TEST\\([A-Za-z0-9_]+\\)")
foreach(line ${_slurm_cases})
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" case "${line}")
  set_tests_properties(slurm.${case} PROPERTIES RESOURCE_LOCK slurm_cluster)
endforeach()
