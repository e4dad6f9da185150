# End-to-end tests of tables and the simulator with the real tune binary
# (tests/test_simulate.c).
tune_add_test_exe(test_simulate SOURCES ${CMAKE_SOURCE_DIR}/tests/test_simulate.c
                  LIBS tune_sim SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB} LABELS e2e TIMEOUT 120)
add_dependencies(test_simulate tune synth_trial)
