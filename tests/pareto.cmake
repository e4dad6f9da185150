# pareto: one ctest entry per TEST in tests/test_pareto.c. malloc is wrapped at link time so
# that the tests can fail each of pareto.c's allocations in turn (rank_out_of_memory,
# hypervolume_out_of_memory).
tune_add_test_exe(test_pareto SOURCES ${CMAKE_SOURCE_DIR}/tests/test_pareto.c
                  LIBS tune_pareto ${MATH_LIB} LABELS pareto TIMEOUT 60)
target_link_options(test_pareto PRIVATE -Wl,--wrap=malloc)
