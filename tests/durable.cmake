# durable: what tune promises whatever happens to a run (tests/test_durable.c): nothing
# deleted outside a trial's folder, nothing doubled or hidden after interruptions, no
# limit on what a trial is handed. resumable_trial is the trial that keeps the checkpoint
# contract to the letter (and, asked to, names hostile checkpoints); the randomized
# interruption test (tests/python/test_interrupt.py) runs it too.
add_executable(resumable_trial ${CMAKE_SOURCE_DIR}/tests/progs/resumable_trial.c)
target_link_libraries(resumable_trial PRIVATE PkgConfig::CJSON)
set_target_properties(resumable_trial PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                 ${CMAKE_BINARY_DIR}/tests/progs)
tune_add_test_exe(test_durable SOURCES ${CMAKE_SOURCE_DIR}/tests/test_durable.c
                  LIBS SQLite::SQLite3 LABELS e2e TIMEOUT 120)
add_dependencies(test_durable tune resumable_trial)
