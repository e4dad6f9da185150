# store: one ctest entry per TEST in tests/test_store.c. busy_second_writer waits out the
# 5 s busy timeout on purpose, hence the longer limit.
tune_add_test_exe(test_store SOURCES ${CMAKE_SOURCE_DIR}/tests/test_store.c
                  LIBS tune_store SQLite::SQLite3 ${MATH_LIB} LABELS store TIMEOUT 60)
