# keeper: how a trial's keeper is started (tests/test_keeper.c): forked by the local
# executor's spawner by default (trial/spawner.c), a fork of the caller with TUNE_SPAWNER=0,
# or the tune-keeper program through posix_spawn when TUNE_KEEPER names it.
# keeper.trial_suite_with_the_program runs every case of tests/test_trial.c once more with
# TUNE_KEEPER=bin/tune-keeper, so both ways keep the keeper's guarantees.
tune_add_test_exe(test_keeper SOURCES ${CMAKE_SOURCE_DIR}/tests/test_keeper.c
                  LIBS tune_trial PkgConfig::CJSON ${MATH_LIB} LABELS trial TIMEOUT 30)
target_include_directories(test_keeper PRIVATE ${CMAKE_SOURCE_DIR})
target_compile_definitions(test_keeper PRIVATE KEEPER_TRIAL="/bin/sleep"
                           KEEPER_PROGRAM="$<TARGET_FILE:tune-keeper>")
add_dependencies(test_keeper tune-keeper)
add_test(NAME keeper.trial_suite_with_the_program COMMAND test_trial)
set_tests_properties(keeper.trial_suite_with_the_program PROPERTIES TIMEOUT 240 LABELS trial
  ENVIRONMENT "TUNE_KEEPER=$<TARGET_FILE:tune-keeper>;TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR}")
# keeper.trial_suite_with_forks_of_tune: the same, with every keeper forked by tune itself
# (TUNE_SPAWNER=0), the path taken when the spawner cannot be started or a launch is too
# big for one message to it (trial/spawner.c).
add_test(NAME keeper.trial_suite_with_forks_of_tune COMMAND test_trial)
set_tests_properties(keeper.trial_suite_with_forks_of_tune PROPERTIES TIMEOUT 240 LABELS trial
  ENVIRONMENT "TUNE_SPAWNER=0;TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR}")
