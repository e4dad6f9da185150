# Tests of the Python front end (python/tune, tests/python/test_*.py) under Debian's
# /usr/bin/python3 with the standard library's unittest: each test method is its own ctest
# entry python.<file>.<method> (test_run.py's test_ctrl_c_then_resume is
# python.run.ctrl_c_then_resume), run by tests/python/run.py, which exits 77 on a skip.
# They drive the real tune binary of this build (TUNE_BIN) on real databases.
find_program(TUNE_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(TUNE_SYSTEM_PYTHON AND TARGET tune)
  file(GLOB _py_tests ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
  list(SORT _py_tests)
  foreach(f ${_py_tests})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
    get_filename_component(stem ${f} NAME_WE)
    string(REGEX REPLACE "^test_" "" short ${stem})
    file(STRINGS ${f} lines REGEX "^class [A-Za-z0-9_]+\\(|^    def test_[A-Za-z0-9_]+\\(")
    set(cls "")
    foreach(line ${lines})
      if(line MATCHES "^class ([A-Za-z0-9_]+)")
        set(cls ${CMAKE_MATCH_1})
      elseif(line MATCHES "def test_([A-Za-z0-9_]+)")
        set(name python.${short}.${CMAKE_MATCH_1})
        add_test(NAME ${name}
                 COMMAND ${TUNE_SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/run.py
                         ${stem}.${cls}.test_${CMAKE_MATCH_1})
        set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
          LABELS "python;e2e"
          ENVIRONMENT "TUNE_SOURCE_DIR=${CMAKE_SOURCE_DIR};TUNE_BINARY_DIR=${CMAKE_BINARY_DIR};TUNE_BIN=${CMAKE_BINARY_DIR}/bin/tune;PYTHONDONTWRITEBYTECODE=1")
      endif()
    endforeach()
  endforeach()
endif()
