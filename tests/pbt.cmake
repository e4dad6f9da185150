# Population Based Training (tests/test_pbt.c): the policy's decisions and the explore
# step against Ray Tune's rule, then the real tune binary on the PBT toy
# (examples/pbt_toy/pbt_toy.c): PBT against the fixed configurations, keep_checkpoints,
# tune show's schedule, kill -9 and tune resume.
add_executable(pbt_toy ${CMAKE_SOURCE_DIR}/examples/pbt_toy/pbt_toy.c)
set_target_properties(pbt_toy PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_pbt SOURCES ${CMAKE_SOURCE_DIR}/tests/test_pbt.c
                  LIBS tune_sched SQLite::SQLite3 ${MATH_LIB} LABELS scheduler e2e TIMEOUT 180)
add_dependencies(test_pbt tune pbt_toy)
