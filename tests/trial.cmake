# trial tests: the executor library against real processes (tests/progs/trial_helper.c is
# the fake trial they start) and the result-line parser against hostile input.
add_executable(trial_helper ${CMAKE_SOURCE_DIR}/tests/progs/trial_helper.c)
set_target_properties(trial_helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                              ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_trial SOURCES ${CMAKE_SOURCE_DIR}/tests/test_trial.c
                  LIBS tune_sched tune_trial PkgConfig::CJSON ${MATH_LIB} LABELS trial TIMEOUT 60)
target_compile_definitions(test_trial PRIVATE
                           TRIAL_HELPER_PATH="$<TARGET_FILE:trial_helper>")
add_dependencies(test_trial trial_helper)
