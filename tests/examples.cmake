# Every example of examples/ run as its README says, briefly (fewer trials, less data):
# ctest's example.NAME runs tests/run_example.py NAME under /usr/bin/python3 with this
# build's tune first on PATH, as after scripts/setup.sh. The PyTorch ones skip (77) where
# /usr/bin/python3 has no torch. examples/ray_style/ is tested by tests/python/.
find_program(TUNE_EXAMPLE_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(TUNE_EXAMPLE_PYTHON AND TARGET tune AND TARGET tune-train)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${CMAKE_CURRENT_SOURCE_DIR}/run_example.py)
  foreach(ex fmnist_asha pbt_toy torch_resumable torch_ddp report_helpers)
    add_test(NAME example.${ex}
             COMMAND ${TUNE_EXAMPLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/run_example.py ${ex})
    set_tests_properties(example.${ex} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
      LABELS "example;e2e"
      ENVIRONMENT "TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
