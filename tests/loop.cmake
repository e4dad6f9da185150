# The scheduler's event loop driven turn by turn through a scripted executor on a virtual
# clock (tests/test_loop.c): no processes, a real store.
tune_add_test_exe(test_loop SOURCES ${CMAKE_SOURCE_DIR}/tests/test_loop.c
                  LIBS tune_sched SQLite::SQLite3 ${MATH_LIB} LABELS scheduler TIMEOUT 60)
