# Pausing and resuming trials (tests/test_pause.c): the loop through a scripted executor on
# a virtual clock, then the real tune binary under ASHA's promotion variant (processes and
# the simulator).
tune_add_test_exe(test_pause SOURCES ${CMAKE_SOURCE_DIR}/tests/test_pause.c
                  LIBS tune_sched SQLite::SQLite3 ${MATH_LIB} LABELS scheduler e2e TIMEOUT 120)
add_dependencies(test_pause tune synth_trial)
