# searchloop: the searcher in the scheduler's loop (tests/test_searchloop.c): "search" and
# "points_to_evaluate" in space.json, trials.suggested_by and the schema-1 migration,
# resume after kill -9, TPE against random on real runs, TPE under `tune simulate`.
if(TARGET tune AND TARGET synth_trial)
  tune_add_test_exe(test_searchloop SOURCES ${CMAKE_SOURCE_DIR}/tests/test_searchloop.c
                    LIBS tune_search tune_store SQLite::SQLite3 PkgConfig::CJSON ${MATH_LIB}
                    LABELS e2e TIMEOUT 180)
  target_include_directories(test_searchloop PRIVATE ${CMAKE_SOURCE_DIR})
  add_dependencies(test_searchloop tune synth_trial mo_trial) # mo_trial: tests/mo.cmake
endif()
