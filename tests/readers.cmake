# End-to-end tests of the reading commands and rm (tests/test_readers.c): their JSON
# against the database, exact configurations, escaped trial output, names and TUNE_DB.
tune_add_test_exe(test_readers SOURCES ${CMAKE_SOURCE_DIR}/tests/test_readers.c
                  LIBS SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB} LABELS e2e TIMEOUT 180)
add_dependencies(test_readers tune synth_trial)
