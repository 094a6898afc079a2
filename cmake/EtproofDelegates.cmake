# Which of the executorch wheel's delegate components etproof links into build/etproof and its
# test executables (CMakeLists.txt), and into etproof::runtime once installed.
#
#   etproof_pick_delegates(<out-var> [<available-component>...])
#
# Pure: takes the components the wheel's CMake config defined (the <c> of each executorch::<c>
# imported target; other names, such as runtime or kernels_optimized, are ignored) and sets
# <out-var> to the delegate components to link, bare names, in the fixed order below. Stops
# with FATAL_ERROR naming backend_xnnpack when it is not among them: XNNPACK is required. The
# config defines a component exactly when the wheel ships lib/lib<library>.so (.dylib on macOS);
# tests/cmake/check_delegates.cmake runs this function on the real file lists of the Linux
# x86-64 and the macOS arm64 wheels (tests/cmake/wheel-*.txt).
#
# What each delegate needs (executorch 1.5.1; `ldd`, `otool -L` on the wheels' libraries):
#   backend_xnnpack   every wheel; needs libexecutorch, libexecutorch_threadpool and the system
#                     C/C++ libraries only.
#   backend_openvino  Linux x86-64; dlopens libopenvino_c at run time (OPENVINO_LIB_PATH),
#                     nothing at link or load time.
#   backend_qnn       Linux x86-64; dlopens the QNN SDK's libraries at run time, likewise.
#   backend_cuda      CUDA wheels only (none on PyPI).
#   backend_coreml    macOS arm64; its dylib's own load commands bring CoreML, Accelerate,
#                     Foundation, CoreFoundation, libobjc and libsqlite3 (all part of macOS), so
#                     the consumer links no framework. Registers "CoreMLBackend".
#   backend_mlx       macOS arm64; its dylib loads Metal, QuartzCore and Foundation itself, and
#                     finds its Metal kernels in lib/mlx.metallib beside it (the config publishes
#                     MLX_METALLIB_PATH; an application that copies the dylib elsewhere must copy
#                     that file too). Registers "MLXBackend".
# The imported targets carry only executorch::runtime and the rpath options; on macOS ld64
# records every dylib it is given, so nothing needs --no-as-needed there.
#
# Not a delegate, so not picked here: kernels_torchao (macOS arm64 only). It registers
# operator kernels (torchao::_linear_8bit_act_{1..8}bit_weight.out, torchao::_embedding_*bit.out,
# torchao::_shared_embedding_*bit.out, torchao::_linear_groupwise_*bit_weight_with_lut.out)
# through register_kernels, no backend. Neither libexecutorch_backend_mlx nor
# libexecutorch_backend_coreml references a torchao symbol: a Core ML or MLX payload runs inside
# its delegate, so their programs do not need it. Only a program whose non-delegated part
# calls torchao:: low-bit operators does; like kernels_quantized it is a kernel library
# (data/backends.json "kernel_libraries"), and whether etproof links it is decided with the
# kernel libraries, not here. extension_cuda (the CUDA stream helper) is not a delegate either.
include_guard(GLOBAL)

function(etproof_pick_delegates out_var)
  # The link order. XNNPACK first; the Linux ones in the order etproof has always linked them;
  # the Apple ones last (no wheel ships both groups).
  set(_order backend_xnnpack backend_openvino backend_qnn backend_cuda backend_coreml backend_mlx)
  set(_available ${ARGN})
  if(NOT "backend_xnnpack" IN_LIST _available)
    list(JOIN _available ", " _offered)
    if(NOT _offered)
      set(_offered "none")
    endif()
    message(FATAL_ERROR
      "etproof: the executorch wheel offers no backend_xnnpack component "
      "(lib/libexecutorch_backend_xnnpack.so or .dylib), and etproof requires the XNNPACK "
      "delegate. Components offered: ${_offered}")
  endif()
  set(_picked "")
  foreach(_c IN LISTS _order)
    if(_c IN_LIST _available)
      list(APPEND _picked ${_c})
    endif()
  endforeach()
  set(${out_var} ${_picked} PARENT_SCOPE)
endfunction()
