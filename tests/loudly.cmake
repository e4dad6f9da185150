# End-to-end tests of "no silently wasted run" (tests/test_loudly.c): exit statuses,
# fail_fast, a metric no trial reports, stderr in errors, stop criteria and budgets, the
# completion grace, buffered and non-JSON output, resume and --more, the live table's
# columns, the checkpoint example. cli/table.c (with cli/front.c, which it ranks
# several objectives with) is compiled in for the table's unit test.
if(TARGET tune AND TARGET synth_trial)
  tune_add_test_exe(test_loudly SOURCES ${CMAKE_SOURCE_DIR}/tests/test_loudly.c
                    ${CMAKE_SOURCE_DIR}/cli/table.c ${CMAKE_SOURCE_DIR}/cli/front.c
                    LIBS tune_sched tune_search tune_pareto tune_store SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB}
                    LABELS e2e TIMEOUT 120)
  target_include_directories(test_loudly PRIVATE ${CMAKE_SOURCE_DIR})
  add_dependencies(test_loudly tune synth_trial)
  # The same failure with every trial behind a keeper forked by tune, whose start waits for
  # the exec (TUNE_SPAWNER=0): the same words, and fail_fast the same way. One folder for
  # both, so never at once.
  add_test(NAME loudly.a_script_without_shebang_fails_fast_with_forks_of_tune
           COMMAND test_loudly a_script_without_shebang_fails_fast_with_exec_format_error)
  set_tests_properties(loudly.a_script_without_shebang_fails_fast_with_forks_of_tune
    PROPERTIES LABELS e2e TIMEOUT 120 RESOURCE_LOCK loudly_noshebang
    ENVIRONMENT "TUNE_SPAWNER=0;TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR}")
  set_tests_properties(loudly.a_script_without_shebang_fails_fast_with_exec_format_error
    PROPERTIES RESOURCE_LOCK loudly_noshebang)
endif()
