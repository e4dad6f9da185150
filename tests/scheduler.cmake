# scheduler tests: policies (ASHA against a golden file from tests/ref/asha_ref.py,
# median stopping, FIFO) and the slice pool.
tune_add_test_exe(test_scheduler SOURCES ${CMAKE_SOURCE_DIR}/tests/test_scheduler.c
                  LIBS tune_sched ${MATH_LIB} LABELS scheduler TIMEOUT 120)
