# End-to-end fault tests (tests/test_faults.c): the real tune against a full disk, bad
# databases, read-only directories, hostile names and output, and its own SIGKILL.
# hostile_trial is the trial program that prints hostile output.
add_executable(hostile_trial ${CMAKE_SOURCE_DIR}/tests/progs/hostile_trial.c)
set_target_properties(hostile_trial PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                               ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_faults SOURCES ${CMAKE_SOURCE_DIR}/tests/test_faults.c
                  LIBS SQLite::SQLite3 LABELS e2e TIMEOUT 300)
add_dependencies(test_faults tune synth_trial hostile_trial)
