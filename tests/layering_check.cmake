# The folder rules of docs/DESIGN.md ("Layout and dependency direction",
# "Composition root"), checked on every #include of the source tree. Run as
#   cmake -DSOURCE_DIR=<repo> -P tests/layering_check.cmake
# (ctest: layering_check). Fails, listing every offending line, when
#  1. a folder includes one it must not depend on:
#       common/      -> common/
#       client/      -> client/ common/
#       coordinator/ -> coordinator/ client/ common/   (never worker/, simserver/, app/)
#       worker/      -> worker/ client/ common/
#       simserver/   -> simserver/ common/
#       app/         -> everything (the composition root)
#     (tests/ and bench/ may include any folder);
#  2. a file outside client/, worker/http/, simserver/ and
#     coordinator/metrics_http/ (the live metrics' endpoint)
#     (and their tests, tests/client/, tests/worker/http/, tests/simserver/,
#     tests/coordinator/metrics_http/) includes Boost.Beast;
#  3. a file outside common/ (and tests/common/) includes zmq.hpp or zmq.h.
cmake_minimum_required(VERSION 3.25)

if(NOT SOURCE_DIR OR NOT IS_DIRECTORY "${SOURCE_DIR}")
  message(FATAL_ERROR "layering_check: give -DSOURCE_DIR=<the repository>")
endif()

# What each source folder may include of the project's folders.
set(kProjectFolders app client common coordinator simserver worker)
set(allowed_common common)
set(allowed_client client common)
set(allowed_coordinator coordinator client common)
set(allowed_worker worker client common)
set(allowed_simserver simserver common)
set(allowed_app ${kProjectFolders})

# Every top-level folder except build trees, node_modules and hidden ones.
file(GLOB top_entries LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*")
set(files "")
foreach(entry IN LISTS top_entries)
  if(NOT IS_DIRECTORY "${SOURCE_DIR}/${entry}" OR entry MATCHES "^(\\.|build|node_modules$)"
     OR EXISTS "${SOURCE_DIR}/${entry}/CMakeCache.txt")
    continue()
  endif()
  file(GLOB_RECURSE found RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${entry}/*.h" "${SOURCE_DIR}/${entry}/*.hpp"
       "${SOURCE_DIR}/${entry}/*.cc" "${SOURCE_DIR}/${entry}/*.cpp")
  list(APPEND files ${found})
endforeach()
list(LENGTH files file_count)
if(file_count EQUAL 0)
  message(FATAL_ERROR "layering_check: no source files under ${SOURCE_DIR}")
endif()

set(problems "")
set(include_count 0)
foreach(file IN LISTS files)
  string(REGEX MATCH "^[^/]+" folder "${file}")
  file(STRINGS "${SOURCE_DIR}/${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
      continue()
    endif()
    set(included "${CMAKE_MATCH_1}")
    math(EXPR include_count "${include_count} + 1")
    # Rule 1: folder dependencies.
    string(REGEX MATCH "^[^/]+" included_folder "${included}")
    if(DEFINED allowed_${folder} AND included_folder IN_LIST kProjectFolders
       AND NOT included_folder IN_LIST allowed_${folder})
      string(REPLACE ";" "/, " allowed_text "${allowed_${folder}}")
      list(APPEND problems
           "${file}: includes \"${included}\": ${folder}/ may include only ${allowed_text}/")
    endif()
    # Rule 2: Boost.Beast.
    if(included MATCHES "^boost/beast([/.]|$)"
       AND NOT file MATCHES "^(tests/)?(client|worker/http|simserver|coordinator/metrics_http)/")
      list(APPEND problems
           "${file}: includes <${included}>: only client/, worker/http/, simserver/ and coordinator/metrics_http/ include Beast")
    endif()
    # Rule 3: ZeroMQ's C++ header.
    if(included MATCHES "^zmq(\\.hpp|\\.h|_addon\\.hpp)$" AND NOT file MATCHES "^(tests/)?common/")
      list(APPEND problems
           "${file}: includes <${included}>: only common/ includes ZeroMQ (common/zmq_transport.h)")
    endif()
  endforeach()
endforeach()

list(LENGTH problems problem_count)
if(problem_count GREATER 0)
  string(REPLACE ";" "\n  " problem_text "${problems}")
  message(FATAL_ERROR
          "layering_check: ${problem_count} include(s) break the folder rules "
          "(docs/DESIGN.md, Composition root):\n  ${problem_text}")
endif()
message(STATUS "layering_check: ok (${file_count} files, ${include_count} includes checked)")
