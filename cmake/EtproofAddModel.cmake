# etproof_add_model(<target> <bundle> [CLASS <name>] [NAMESPACE <ns>]) — the typed C++ API of a
# bundle in <target> (docs/api.md, "The generated C++ API"). Included by the installed package's
# config (find_package(etproof)).
#
# <bundle>: a bundle directory (relative paths are from the calling CMakeLists.txt's directory).
# It runs `etproof gen <bundle> --out DIR` (DIR = <build dir>/etproof-gen/<target>/<bundle name>)
# when CMake configures, to learn the files' names and fail early, and again at build time
# whenever the bundle's manifest changes; adds the generated source and its directory to
# <target>; links etproof::codegen (and the layers below it); and copies the bundle directory beside the
# target's binary, as etproof-bundles/<bundle name>/, whenever one of its files changed (the
# generated class's open() with no argument opens that copy). <bundle> may also be its manifest
# or .pte, as for etproof gen. CLASS / NAMESPACE: etproof gen's --class /
# --namespace (NAMESPACE "": --no-namespace; two bundles of one model in one target need a CLASS
# each).
function(etproof_add_model target bundle)
  cmake_parse_arguments(PARSE_ARGV 2 _eam "" "CLASS;NAMESPACE" "")
  if(_eam_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "etproof_add_model: unknown arguments ${_eam_UNPARSED_ARGUMENTS} "
                        "(it takes <target> <bundle> [CLASS name] [NAMESPACE ns])")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "etproof_add_model: no target ${target} (declare it first: add_executable)")
  endif()
  if(NOT TARGET etproof::cli)
    message(FATAL_ERROR "etproof_add_model: this etproof package has no etproof executable "
                        "(re-install etproof: cmake --install build --prefix P)")
  endif()
  get_filename_component(_dir "${bundle}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${_dir}")
    message(FATAL_ERROR "etproof_add_model: ${_dir} does not exist (relative paths are from "
                        "${CMAKE_CURRENT_SOURCE_DIR}; export a bundle: etproof export MODEL --backend B --out DIR)")
  endif()
  if(NOT IS_DIRECTORY "${_dir}")  # the bundle's manifest or .pte, as etproof gen takes them
    get_filename_component(_dir "${_dir}" DIRECTORY)
  endif()
  file(GLOB _manifest "${_dir}/*.etproof.json")
  list(LENGTH _manifest _n)
  if(NOT _n EQUAL 1)
    message(FATAL_ERROR "etproof_add_model: ${_dir} is not a bundle directory (it must hold one "
                        "NAME.etproof.json; it holds ${_n}; export one: etproof export MODEL --backend B --out DIR)")
  endif()
  get_filename_component(_name "${_manifest}" NAME)
  string(REGEX REPLACE "\\.etproof\\.json$" "" _name "${_name}")
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/etproof-gen/${target}/${_name}")
  set(_args gen "${_dir}" --out "${_out}")
  if(DEFINED _eam_CLASS)
    list(APPEND _args --class "${_eam_CLASS}")
  endif()
  # NAMESPACE "" (the global namespace): read from ARGV, as cmake_parse_arguments drops an empty
  # value before CMake 3.31 (CMP0174).
  set(_i 2)
  while(_i LESS ARGC)
    math(EXPR _next "${_i} + 1")
    if("${ARGV${_i}}" STREQUAL "NAMESPACE" AND _next LESS ARGC)
      if("${ARGV${_next}}" STREQUAL "")
        list(APPEND _args --no-namespace)
      else()
        list(APPEND _args --namespace "${ARGV${_next}}")
      endif()
    endif()
    set(_i ${_next})
  endwhile()
  get_target_property(_cli etproof::cli LOCATION)
  file(REMOVE_RECURSE "${_out}")
  execute_process(COMMAND "${_cli}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _said
                  ERROR_VARIABLE _said)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "etproof_add_model(${target} ${bundle}): etproof gen failed:\n${_said}")
  endif()
  file(GLOB _header "${_out}/*.h")
  file(GLOB _source "${_out}/*.cpp")
  # Two bundles whose classes share a name in one target would only fail at link time.
  get_filename_component(_header_name "${_header}" NAME)
  get_property(_headers TARGET ${target} PROPERTY ETPROOF_GENERATED_HEADERS)
  if(_header_name IN_LIST _headers)
    message(FATAL_ERROR "etproof_add_model(${target} ${bundle}): ${target} already has a generated "
                        "${_header_name} (another bundle of the same model): give each a CLASS name")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY ETPROOF_GENERATED_HEADERS ${_header_name})
  # A re-export that renames the model changes the files' names: configure again then.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_manifest}")
  add_custom_command(OUTPUT ${_header} ${_source}
                     COMMAND etproof::cli ${_args}
                     DEPENDS "${_manifest}" etproof::cli
                     COMMENT "etproof gen: the typed API of ${_name}" VERBATIM)
  target_sources(${target} PRIVATE ${_source} ${_header})
  target_include_directories(${target} PRIVATE "${_out}")
  target_link_libraries(${target} PRIVATE etproof::codegen)
  # The bundle beside the binary, copied again whenever any of its files changes (a stamp file
  # depending on each), as part of building the target.
  file(GLOB_RECURSE _files LIST_DIRECTORIES false "${_dir}/*")
  set(_stamp "${_out}.copied")
  add_custom_command(OUTPUT "${_stamp}"
                     COMMAND ${CMAKE_COMMAND} -E remove_directory
                             "$<TARGET_FILE_DIR:${target}>/etproof-bundles/${_name}"
                     COMMAND ${CMAKE_COMMAND} -E copy_directory "${_dir}"
                             "$<TARGET_FILE_DIR:${target}>/etproof-bundles/${_name}"
                     COMMAND ${CMAKE_COMMAND} -E touch "${_stamp}"
                     DEPENDS ${_files}
                     COMMENT "etproof: bundle ${_name} beside ${target}" VERBATIM)
  string(MAKE_C_IDENTIFIER "etproof_bundle_${target}_${_name}" _copy)
  add_custom_target(${_copy} DEPENDS "${_stamp}")
  add_dependencies(${target} ${_copy})
endfunction()
