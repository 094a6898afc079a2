# The delegate pick of cmake/EtproofDelegates.cmake against each executorch wheel's real file
# list, without the machine that wheel is for (CTest: cmake.delegates_for_each_wheel).
#
#   cmake -P tests/cmake/check_delegates.cmake
#   cmake -DCONFIGURED_PLATFORM=Linux-x86_64 -DCONFIGURED_VERSION=1.5.1
#         -DCONFIGURED_COMPONENTS=runtime,threadpool,... -DCONFIGURED_DELEGATES=backend_xnnpack,...
#         -P tests/cmake/check_delegates.cmake      (what CMakeLists.txt registers)
#
# Each tests/cmake/wheel-<name>.txt (scripts/wheel-components.sh writes them from the wheels
# themselves) lists the wheel's _executorch_define_component(<component> <library>) calls and the
# files under its executorch/lib/. The components are derived from them the way the config's
# _executorch_find_library does: <component> exists when lib<library>.dylib or lib<library>.*.dylib
# (macOS), lib<library>.so or lib<library>.so.* (elsewhere) is there; executorch::runtime when
# libexecutorch is. Checked:
#   1. each wheel's pick is the expected one (the table below);
#   2. every backend_* component a wheel's config can define is one the pick knows, so a delegate
#      added by a new wheel is noticed here rather than silently left unlinked;
#   3. without backend_xnnpack the pick stops, naming it;
#   4. given CONFIGURED_*: the configure that registered this test found the same executorch
#      version, the same components and linked the same delegates as the fixture of its platform
#      says (so the derivation above is checked against the real config on the machine at hand,
#      and a wheel bump without regenerating the fixtures fails here).
cmake_minimum_required(VERSION 3.28)
get_filename_component(_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
include(${_root}/cmake/EtproofDelegates.cmake)

# Check 3 runs the pick in a child cmake -P of this file: FATAL_ERROR ends the process.
if(DEFINED ETPROOF_PICK_WITHOUT_XNNPACK)
  etproof_pick_delegates(_unused runtime kernels_optimized backend_coreml backend_mlx)
  return()
endif()

# Expected pick per fixture, in link order.
set(EXPECT_linux-x86_64 backend_xnnpack backend_openvino backend_qnn)
set(EXPECT_macos-arm64 backend_xnnpack backend_coreml backend_mlx)

set(_failures "")
macro(_fail msg)
  string(APPEND _failures "\n  ${msg}")
endmacro()

# Reads one fixture: sets <prefix>_PLATFORM, <prefix>_VERSION, <prefix>_COMPONENTS (every
# component the config would define, runtime first, then in the config's order) and
# <prefix>_BACKENDS (every backend_* the config can define, shipped or not).
function(_read_fixture fixture prefix)
  file(STRINGS "${fixture}" _lines)
  set(_platform "")
  set(_version "")
  set(_defs "")
  set(_libs "")
  foreach(_l IN LISTS _lines)
    if(_l MATCHES "^platform (.+)$")
      set(_platform "${CMAKE_MATCH_1}")
    elseif(_l MATCHES "^version (.+)$")
      set(_version "${CMAKE_MATCH_1}")
    elseif(_l MATCHES "^component ([A-Za-z0-9_]+) ([A-Za-z0-9_]+)")
      list(APPEND _defs "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}")
    elseif(_l MATCHES "^lib (.+)$")
      list(APPEND _libs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(NOT _platform OR NOT _defs OR NOT _libs)
    message(FATAL_ERROR "${fixture}: no platform, component or lib lines: regenerate it with scripts/wheel-components.sh")
  endif()
  # _executorch_find_library: Mach-O puts the version before the suffix, ELF after it.
  if(_platform MATCHES "^Darwin-")
    set(_pattern "^@base@(\\.dylib|\\..*\\.dylib)$")
  else()
    set(_pattern "^@base@(\\.so|\\.so\\..*)$")
  endif()
  set(_components "")
  set(_backends "")
  foreach(_d IN LISTS _defs ITEMS runtime:executorch)
    string(REPLACE ":" ";" _d "${_d}")
    list(GET _d 0 _component)
    list(GET _d 1 _library)
    if(_component MATCHES "^backend_")
      list(APPEND _backends ${_component})
    endif()
    string(REPLACE "@base@" "lib${_library}" _re "${_pattern}")
    set(_found FALSE)
    foreach(_f IN LISTS _libs)
      if(_f MATCHES "${_re}")
        set(_found TRUE)
      endif()
    endforeach()
    if(_found)
      if(_component STREQUAL "runtime")
        list(PREPEND _components runtime)
      else()
        list(APPEND _components ${_component})
      endif()
    endif()
  endforeach()
  set(${prefix}_PLATFORM "${_platform}" PARENT_SCOPE)
  set(${prefix}_VERSION "${_version}" PARENT_SCOPE)
  set(${prefix}_COMPONENTS ${_components} PARENT_SCOPE)
  set(${prefix}_BACKENDS ${_backends} PARENT_SCOPE)
endfunction()

file(GLOB _fixtures "${CMAKE_CURRENT_LIST_DIR}/wheel-*.txt")
list(SORT _fixtures)
if(NOT _fixtures)
  message(FATAL_ERROR "no tests/cmake/wheel-*.txt: run scripts/wheel-components.sh")
endif()
set(_configured_fixture "")
foreach(_fixture IN LISTS _fixtures)
  get_filename_component(_name "${_fixture}" NAME_WE)
  string(REGEX REPLACE "^wheel-" "" _name "${_name}")
  _read_fixture("${_fixture}" W)
  etproof_pick_delegates(_picked ${W_COMPONENTS})
  list(JOIN W_COMPONENTS " " _shown)
  message(STATUS "${_name} (${W_PLATFORM}, executorch ${W_VERSION}): components ${_shown}")
  list(JOIN _picked " " _shown)
  message(STATUS "${_name}: delegates picked: ${_shown}")
  # 1.
  if(NOT DEFINED EXPECT_${_name})
    _fail("${_name}: no expected pick for this fixture in tests/cmake/check_delegates.cmake")
  elseif(NOT "${_picked}" STREQUAL "${EXPECT_${_name}}")
    _fail("${_name}: picked '${_picked}', expected '${EXPECT_${_name}}'")
  endif()
  # 2. Every backend the config knows, offered at once: each one must come back.
  etproof_pick_delegates(_all backend_xnnpack ${W_BACKENDS})
  foreach(_b IN LISTS W_BACKENDS)
    if(NOT _b IN_LIST _all)
      _fail("${_name}: the wheel's config defines ${_b}, which cmake/EtproofDelegates.cmake does not know: decide whether to link it")
    endif()
  endforeach()
  # 4.
  if(DEFINED CONFIGURED_PLATFORM AND W_PLATFORM STREQUAL CONFIGURED_PLATFORM)
    set(_configured_fixture "${_name}")
    string(REPLACE "," ";" _cc "${CONFIGURED_COMPONENTS}")
    string(REPLACE "," ";" _cd "${CONFIGURED_DELEGATES}")
    set(_want ${W_COMPONENTS})
    list(SORT _cc)
    list(SORT _want)
    if(DEFINED CONFIGURED_VERSION AND NOT CONFIGURED_VERSION STREQUAL W_VERSION)
      _fail("${_name}: this build links executorch ${CONFIGURED_VERSION}, the fixture is of ${W_VERSION}: run scripts/wheel-components.sh")
    endif()
    if(NOT "${_cc}" STREQUAL "${_want}")
      _fail("${_name}: this build's wheel defined '${_cc}', the fixture derives '${_want}': run scripts/wheel-components.sh, or the derivation here no longer matches the config")
    endif()
    if(NOT "${_cd}" STREQUAL "${_picked}")
      _fail("${_name}: this build links '${_cd}', the pick for the fixture is '${_picked}'")
    endif()
  endif()
endforeach()
if(DEFINED CONFIGURED_PLATFORM)
  if(_configured_fixture)
    message(STATUS "this build (${CONFIGURED_PLATFORM}) checked against wheel-${_configured_fixture}.txt")
  else()
    message(STATUS "no fixture for this build's platform ${CONFIGURED_PLATFORM}: check 4 skipped")
  endif()
endif()

# 3.
execute_process(COMMAND "${CMAKE_COMMAND}" -DETPROOF_PICK_WITHOUT_XNNPACK=1 -P "${CMAKE_CURRENT_LIST_FILE}"
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(_rc EQUAL 0)
  _fail("without backend_xnnpack the pick did not stop")
elseif(NOT _err MATCHES "offers no backend_xnnpack component")
  _fail("without backend_xnnpack the pick stopped without naming it: ${_err}")
endif()

if(_failures)
  message(FATAL_ERROR "cmake.delegates_for_each_wheel:${_failures}")
endif()
message(STATUS "cmake.delegates_for_each_wheel: passed")
