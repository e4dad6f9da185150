# End-to-end tests of "no silently wasted run" (tests/test_loudly.c): exit statuses,
# fail_fast, a metric no trial reports, stderr in errors, stop criteria and budgets, the
# completion grace, buffered and non-JSON output, resume and --more, the live table's
# columns, the checkpoint example. cli/table.c is compiled in for the table's unit test.
if(TARGET tune AND TARGET synth_trial)
  tune_add_test_exe(test_loudly SOURCES ${CMAKE_SOURCE_DIR}/tests/test_loudly.c
                    ${CMAKE_SOURCE_DIR}/cli/table.c
                    LIBS tune_sched tune_search SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB}
                    LABELS e2e TIMEOUT 120)
  target_include_directories(test_loudly PRIVATE ${CMAKE_SOURCE_DIR})
  add_dependencies(test_loudly tune synth_trial)
endif()
