# vocab: one ctest entry per TEST in tests/test_vocab.c: the names of trial statuses,
# schedulers and modes, held to their one spelling (sched.h, space.h) everywhere else.
tune_add_test_exe(test_vocab SOURCES ${CMAKE_SOURCE_DIR}/tests/test_vocab.c
                  LIBS tune_sched tune_store tune_search SQLite::SQLite3 PkgConfig::CJSON
                  ${MATH_LIB} LABELS vocab TIMEOUT 30)
target_include_directories(test_vocab PRIVATE ${CMAKE_SOURCE_DIR})
