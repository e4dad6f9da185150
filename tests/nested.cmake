# End-to-end tests of nested search spaces and validate's notes (tests/test_nested.c).
if(TARGET tune)
  tune_add_test_exe(test_nested SOURCES ${CMAKE_SOURCE_DIR}/tests/test_nested.c
                    LIBS SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB} LABELS e2e TIMEOUT 120)
  add_dependencies(test_nested tune synth_trial)
endif()
