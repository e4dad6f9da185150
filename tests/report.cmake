# After-the-run tests (tests/test_report.c): tune show, plot and report against real runs,
# the report rendered in headless Chromium (skipped without /usr/bin/chromium), the
# reporting helpers and the PyTorch DDP example (skipped without torch). The example C
# trial that uses include/tune_report.h is built here as the helper's end-to-end check.
add_executable(report_helper_trial ${CMAKE_SOURCE_DIR}/examples/report_helpers/trial.c)
target_include_directories(report_helper_trial PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(report_helper_trial PRIVATE ${MATH_LIB})
set_target_properties(report_helper_trial PROPERTIES
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/progs)
# The torch example takes about a minute on two cores; Chromium a few seconds a page.
tune_add_test_exe(test_report SOURCES ${CMAKE_SOURCE_DIR}/tests/test_report.c
                  LIBS tune_store SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB}
                  LABELS e2e TIMEOUT 600)
add_dependencies(test_report tune synth_trial report_helper_trial)
