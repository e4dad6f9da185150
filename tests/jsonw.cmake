# jsonw: one ctest entry per TEST in tests/test_jsonw.c.
tune_add_test_exe(test_jsonw SOURCES ${CMAKE_SOURCE_DIR}/tests/test_jsonw.c
                  LIBS tune_jsonw PkgConfig::CJSON LABELS jsonw TIMEOUT 30)
