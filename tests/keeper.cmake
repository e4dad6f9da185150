# keeper: how a trial's keeper is started (tests/test_keeper.c): the tune-keeper program
# through posix_spawn, or a fork of the caller. keeper.trial_suite_forked runs every case
# of tests/test_trial.c once more with TUNE_KEEPER= (the fork), so both ways keep passing
# the keeper's guarantees.
tune_add_test_exe(test_keeper SOURCES ${CMAKE_SOURCE_DIR}/tests/test_keeper.c
                  LIBS tune_trial PkgConfig::CJSON ${MATH_LIB} LABELS trial TIMEOUT 30)
target_include_directories(test_keeper PRIVATE ${CMAKE_SOURCE_DIR})
target_compile_definitions(test_keeper PRIVATE KEEPER_TRIAL="/bin/sleep")
add_test(NAME keeper.trial_suite_forked COMMAND test_trial)
set_tests_properties(keeper.trial_suite_forked PROPERTIES TIMEOUT 240 LABELS trial
  ENVIRONMENT "TUNE_KEEPER=;TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR}")
