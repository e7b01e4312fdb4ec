# kvcs_library(name SOURCES ... DEPS ...): one static library per folder.
function(kvcs_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${A_DEPS} PRIVATE kvcs_warnings)
endfunction()

# kvcs_test_tools(name SOURCES ... DEPS ...): the test doubles and vectors of a folder
# (<folder>/test_tools/), a library of their own that only tests and fuzzers link. Production
# libraries never contain them (the include check refuses production code including them).
function(kvcs_test_tools name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT KVCS_BUILD_TESTS AND NOT KVCS_FUZZ)
    return()
  endif()
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${A_DEPS} PRIVATE kvcs_warnings)
endfunction()

# kvcs_test(name SOURCES ... DEPS ...): one GoogleTest binary, registered with CTest.
function(kvcs_test name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT KVCS_BUILD_TESTS OR KVCS_FUZZ)
    return()
  endif()
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                        kvcs_warnings)
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
endfunction()

set(KVCS_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzzer runs under CTest")

# kvcs_fuzzer(name SOURCE file DEPS ...): a libFuzzer target, run briefly by CTest label 'fuzz'.
function(kvcs_fuzzer name)
  cmake_parse_arguments(A "" "SOURCE" "DEPS" ${ARGN})
  if(NOT KVCS_FUZZ)
    return()
  endif()
  add_executable(${name} ${A_SOURCE})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  if(NOT TARGET kvcs_fuzzers)
    add_custom_target(kvcs_fuzzers)
  endif()
  add_dependencies(kvcs_fuzzers ${name})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set(corpus ${PROJECT_SOURCE_DIR}/fuzz/corpus/${name})
  set(runs_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
  # Seeds in fuzz/corpus/<name>/ are read; new inputs go to the build tree only.
  add_test(NAME ${name}
           COMMAND sh -c "mkdir -p ${runs_dir} && seeds= && if [ -d ${corpus} ]; then seeds=${corpus}; fi && exec $<TARGET_FILE:${name}> -max_total_time=${KVCS_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 ${runs_dir} $seeds")
  set_tests_properties(${name} PROPERTIES LABELS fuzz)
endfunction()
