// The generated C++ API's runtime side (etproof/typed.h): extent checks, and opening the bundle a
// model class was generated from.
#include "etproof/codegen/typed.h"

#include <bit>
#include <system_error>

#include "etproof/runtime/isolation.h"

namespace etproof {

// IEEE 754 binary16, converted with round to nearest even, as ExecuTorch's own Half does:
// _Float16 (GCC >= 12 on x86-64, GCC >= 13 and Clang on arm64); GCC 12 for arm64 (Debian's
// cross compiler, the emulated worker) knows the same type as __fp16 in C++.
#if defined(__aarch64__) && !defined(__clang__) && __GNUC__ < 13
using native_half = __fp16;
#else
using native_half = _Float16;
#endif
float half_to_float(half h) { return static_cast<float>(std::bit_cast<native_half>(h.bits)); }
half half_from_float(float f) { return half{std::bit_cast<uint16_t>(static_cast<native_half>(f))}; }

namespace detail {

namespace {
std::string extents_to_string(std::span<const int64_t> extents) {
  std::string s = "[";
  for (size_t i = 0; i < extents.size(); ++i) {
    if (i) s += ", ";
    s += extents[i] == dyn ? std::string("dyn") : std::to_string(extents[i]);
  }
  return s + "]";
}
}  // namespace

void check_extents(std::span<const int64_t> extents, std::span<const int64_t> shape,
                   std::string_view what) {
  bool fits = extents.size() == shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = shape[i] >= 0 && (extents[i] == dyn || extents[i] == shape[i]);
  if (!fits)
    throw Error(ErrorKind::kShapeMismatch,
                std::string(what) + " has shape " +
                    shape_to_string(std::vector<int64_t>(shape.begin(), shape.end())) +
                    "; its type takes " + extents_to_string(extents),
                "give it a shape of that rank, with the static sizes as they are");
}

void check_host(const HostTensor& t, DType dtype, std::span<const int64_t> extents,
                std::string_view what) {
  if (t.dtype != dtype)
    throw Error(ErrorKind::kDtypeMismatch,
                std::string(what) + " is " + std::string(to_string(t.dtype)) + "; its type holds " +
                    std::string(to_string(dtype)),
                "regenerate the code from the bundle (etproof gen) if the program changed");
  check_extents(extents, t.shape, what);
  if (t.data.size() != t.numel() * dtype_size(t.dtype))
    throw Error(ErrorKind::kShapeMismatch,
                std::string(what) + " holds " + std::to_string(t.data.size()) + " bytes for " +
                    std::to_string(t.numel()) + " elements of " + std::string(to_string(t.dtype)),
                "build the host tensor with numel × element size bytes");
}

}  // namespace detail

ModelHandle ModelHandle::open(const std::filesystem::path& path, const GeneratedFrom& from) {
  Bundle b = open_bundle(path);
  if (b.manifest.artifact.sha256 != from.program_sha256)
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle " + b.dir.string() + " holds program " + b.manifest.artifact.sha256 +
                    " (" + b.manifest.name + "); this code was generated from " +
                    std::string(from.program_sha256) + " (" + std::string(from.bundle_name) + ")",
                "regenerate the code from this bundle (etproof gen, or rebuild: etproof_add_model "
                "regenerates when the bundle changes), or open the bundle it was generated from");
  LoadedModel m = LoadedModel::load(b);
  return ModelHandle(std::move(b), std::move(m));
}

std::filesystem::path bundle_beside_executable(std::string_view name) {
  std::error_code ec;
  const std::filesystem::path exe = executable_path(ec);
  if (exe.empty())
    throw Error(ErrorKind::kIo, "cannot find the running executable's path: " + ec.message(),
                "open the bundle by its path instead");
  return exe.parent_path() / "etproof-bundles" / std::string(name);
}

}  // namespace etproof
