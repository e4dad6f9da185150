# Unit tests of the live table (tests/test_table.c): cli/table.c renders made-up snapshots
# at 40 to 120 columns, and its width policy is checked on the text.
tune_add_test_exe(test_table SOURCES ${CMAKE_SOURCE_DIR}/tests/test_table.c
                  ${CMAKE_SOURCE_DIR}/cli/table.c ${CMAKE_SOURCE_DIR}/cli/front.c
                  LIBS tune_sched tune_search tune_pareto tune_store PkgConfig::CJSON ${MATH_LIB})
target_include_directories(test_table PRIVATE ${CMAKE_SOURCE_DIR})
