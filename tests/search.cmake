# search: parsing, errors, sampling and argv rendering of space.json.
tune_add_test_exe(test_search SOURCES ${CMAKE_SOURCE_DIR}/tests/test_search.c LIBS tune_search
                  LABELS search TIMEOUT 30)
