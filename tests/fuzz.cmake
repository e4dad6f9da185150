# fuzz: the two parsers that read untrusted bytes (space.json: search/; trial stdout lines:
# trial/result.c). fuzz_<t> are libFuzzer programs (TUNE_FUZZ=ON, clang only); the replay
# tests run every seed and every crash ever found (fuzz/corpus/<t>, fuzz/crashes/<t>)
# through the same entry point with any compiler, so a finding stays a test forever.
set(_fuzz_dir ${CMAKE_SOURCE_DIR}/fuzz)
set(_fuzz_lib_space tune_search)
set(_fuzz_lib_result tune_trial)
# An emptied corpus must fail the replay rather than pass it.
set(_fuzz_min_space 20)
set(_fuzz_min_result 20)
foreach(t space result)
  add_executable(fuzz_replay_${t} ${_fuzz_dir}/fuzz_${t}.c ${_fuzz_dir}/replay.c)
  target_link_libraries(fuzz_replay_${t} PRIVATE ${_fuzz_lib_${t}} PkgConfig::CJSON ${MATH_LIB})
  set_target_properties(fuzz_replay_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                    ${CMAKE_BINARY_DIR}/fuzz)
  add_test(NAME fuzz.${t}_replay
           COMMAND fuzz_replay_${t} --min ${_fuzz_min_${t}} ${_fuzz_dir}/corpus/${t}
                   ${_fuzz_dir}/crashes/${t})
  set_tests_properties(fuzz.${t}_replay PROPERTIES LABELS fuzz TIMEOUT 60)
  if(TUNE_FUZZ)
    add_executable(fuzz_${t} ${_fuzz_dir}/fuzz_${t}.c)
    target_link_libraries(fuzz_${t} PRIVATE ${_fuzz_lib_${t}} PkgConfig::CJSON ${MATH_LIB})
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    set_target_properties(fuzz_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  endif()
endforeach()
