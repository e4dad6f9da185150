# End-to-end tests of the real `tune` binary (tests/test_cli.c) and their trial program.
add_executable(synth_trial ${CMAKE_SOURCE_DIR}/tests/progs/synth_trial.c)
target_link_libraries(synth_trial PRIVATE ${MATH_LIB})
set_target_properties(synth_trial PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_cli SOURCES ${CMAKE_SOURCE_DIR}/tests/test_cli.c
                  LIBS SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB} LABELS e2e TIMEOUT 120)
add_dependencies(test_cli tune synth_trial trial_helper) # trial_helper: tests/trial.cmake
