# Source checks the build enforces (run on every build, and as CTest tests):
#   - check_includes.py: every quoted #include stays within the folder's declared dependencies
#     (target_link_libraries), header-only files included;
#   - check_coroutines.py: no co_await inside a braced initializer (GCC 12 destroys the awaited
#     temporary twice there: the double free fixed in 84eec10).
# Include this file last from the top-level CMakeLists.txt, after every target is defined.
find_package(Python3 COMPONENTS Interpreter REQUIRED)

# Every buildsystem target defined under `dir`, recursively.
function(kvcs_collect_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    kvcs_collect_targets(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Writes the manifest check_includes.py reads, one line per target:
#   name TAB type TAB linked targets TAB sources TAB interface (PUBLIC/INTERFACE) targets.
function(kvcs_write_target_manifest path)
  kvcs_collect_targets(${PROJECT_SOURCE_DIR} targets)
  set(text "")
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(dir ${t} SOURCE_DIR)
    get_target_property(srcs ${t} SOURCES)
    set(abs "")
    foreach(s IN LISTS srcs)
      if(s MATCHES "^\\$<")
        continue()
      endif()
      if(NOT IS_ABSOLUTE ${s})
        set(s ${dir}/${s})
      endif()
      list(APPEND abs ${s})
    endforeach()
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(links ${t} ${prop})
      set(${prop} "")
      foreach(l IN LISTS links)
        if(TARGET ${l})
          list(APPEND ${prop} ${l})
        endif()
      endforeach()
    endforeach()
    string(APPEND text "${t}\t${type}\t${LINK_LIBRARIES}\t${abs}\t${INTERFACE_LINK_LIBRARIES}\n")
  endforeach()
  file(WRITE ${path} "${text}")
endfunction()

# kvcs_source_checks(SCAN dir...): checks the files under the named top-level folders.
function(kvcs_source_checks)
  cmake_parse_arguments(A "" "" "SCAN;LABELS" ${ARGN})
  set(manifest ${PROJECT_BINARY_DIR}/kvcs_targets.tsv)
  kvcs_write_target_manifest(${manifest})
  set(scan_globs "")
  foreach(d IN LISTS A_SCAN)
    list(APPEND scan_globs ${PROJECT_SOURCE_DIR}/${d}/*.cc ${PROJECT_SOURCE_DIR}/${d}/*.h)
  endforeach()
  file(GLOB_RECURSE checked CONFIGURE_DEPENDS ${scan_globs})
  set(tools ${PROJECT_SOURCE_DIR}/cmake)
  set(includes_cmd ${Python3_EXECUTABLE} ${tools}/check_includes.py --manifest ${manifest}
                   --root ${PROJECT_SOURCE_DIR} --scan ${A_SCAN})
  if(NOT KVCS_BUILD_TESTS AND NOT KVCS_FUZZ)
    list(APPEND includes_cmd --ignore-unowned)  # *_test.cc and test_tools/ are not built
  endif()
  set(coroutines_cmd ${Python3_EXECUTABLE} ${tools}/check_coroutines.py --root
                     ${PROJECT_SOURCE_DIR} --scan ${A_SCAN})
  # The build refuses a wrong include or the coroutine trap: kvcs_source_checks is part of ALL.
  set(stamp ${PROJECT_BINARY_DIR}/kvcs_source_checks.stamp)
  add_custom_command(OUTPUT ${stamp}
                     COMMAND ${includes_cmd}
                     COMMAND ${coroutines_cmd}
                     COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
                     DEPENDS ${checked} ${manifest} ${tools}/check_includes.py
                             ${tools}/check_coroutines.py
                     COMMENT "Checking includes against declared dependencies, and coroutines"
                     VERBATIM)
  add_custom_target(kvcs_source_checks ALL DEPENDS ${stamp})
  if(KVCS_BUILD_TESTS OR KVCS_FUZZ)
    add_test(NAME source_check_includes COMMAND ${includes_cmd})
    add_test(NAME source_check_coroutines COMMAND ${coroutines_cmd})
    add_test(NAME source_checks_selftest
             COMMAND ${Python3_EXECUTABLE} ${tools}/source_checks_test.py)
    set_tests_properties(source_check_includes source_check_coroutines source_checks_selftest
                         PROPERTIES LABELS "source;${A_LABELS}")
  endif()
endfunction()
