# End-to-end tests of tune best, trials, show and report with several objectives
# (tests/test_cli_mo.c): each trial echoes one chosen JSON result.
tune_add_test_exe(test_cli_mo SOURCES ${CMAKE_SOURCE_DIR}/tests/test_cli_mo.c
                  LIBS SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB} LABELS e2e TIMEOUT 120)
add_dependencies(test_cli_mo tune synth_trial)
