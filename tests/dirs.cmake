# dirs: one ctest entry per TEST in tests/test_dirs.c.
tune_add_test_exe(test_dirs SOURCES ${CMAKE_SOURCE_DIR}/tests/test_dirs.c
                  LIBS tune_dirs LABELS dirs TIMEOUT 30)
