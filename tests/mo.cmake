# mo: early stopping with several objectives end to end (tests/test_mo.c): the loop through
# the scripted executor on a virtual clock, two objectives under a constraint, a kill -9 in
# the middle of a turn and a resume that must decide as an uninterrupted run.
tune_add_test_exe(test_mo SOURCES ${CMAKE_SOURCE_DIR}/tests/test_mo.c
                  LIBS tune_sched SQLite::SQLite3 ${MATH_LIB} LABELS mo e2e TIMEOUT 120)
