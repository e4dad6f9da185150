# sim tests: tables of learning curves, the nearest-configuration rule and the synthetic
# family (tests/test_sim.c).
tune_add_test_exe(test_sim SOURCES ${CMAKE_SOURCE_DIR}/tests/test_sim.c LIBS tune_sim
                  LABELS sim TIMEOUT 30)
