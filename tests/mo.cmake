# mo: early stopping with several objectives end to end (tests/test_mo.c): the loop through
# the scripted executor on a virtual clock, two objectives under a constraint, a kill -9 in
# the middle of a turn and a resume that must decide as an uninterrupted run.
tune_add_test_exe(test_mo SOURCES ${CMAKE_SOURCE_DIR}/tests/test_mo.c
                  LIBS tune_sched SQLite::SQLite3 ${MATH_LIB} LABELS mo e2e TIMEOUT 240)
# the trial of the cases that run the real tune binary: two objectives and a constrained key
add_executable(mo_trial ${CMAKE_SOURCE_DIR}/tests/progs/mo_trial.c)
target_link_libraries(mo_trial PRIVATE ${MATH_LIB})
set_target_properties(mo_trial PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/progs)
add_dependencies(test_mo tune mo_trial)
