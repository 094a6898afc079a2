// etproof/codegen/typed.h — what the C++ API that `etproof gen` writes is built on (docs/api.md, "The
// generated C++ API"): a tensor typed by its element type and extents, and the model handle that
// checks the bundle is the one the code was generated from.
//
// Tensor<T, E...>: a dense, C-ordered tensor that owns its elements. T is the element type, one
// per manifest dtype (float32 float, float64 double, float16 etproof::half, int8 int8_t, uint8
// uint8_t, int16 int16_t, int32 int32_t, int64 int64_t, bool bool); E... are its extents, one per
// dimension, each a size >= 0 or etproof::dyn (a dimension the program takes at any size in its
// exported range). The rank and every static extent are part of the type, so passing a tensor of
// another element type, rank or static extent to a generated `run` does not compile; a dynamic
// extent is checked at run time (by the constructor against the type, by the runtime binding
// against the manifest's range, Error{kShapeMismatch}).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/core/labels.h"
#include "etproof/core/npy.h"

namespace etproof {

// An extent whose size is known only at run time.
inline constexpr int64_t dyn = -1;

// IEEE 754 binary16, as its bits (the manifest's float16). Arithmetic is the caller's: convert
// with half_to_float / half_from_float (round to nearest even).
struct half {
  uint16_t bits = 0;
};
float half_to_float(half h);
half half_from_float(float f);

// The element type of each manifest dtype.
template <class T>
struct dtype_of;  // undefined: T is no manifest dtype's element type
template <> struct dtype_of<float> { static constexpr DType value = DType::kFloat32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::kFloat64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::kFloat16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::kBool; };
static_assert(sizeof(bool) == 1 && sizeof(half) == 2, "etproof assumes 1-byte bool, 2-byte half");

namespace detail {
// Throws Error{kShapeMismatch} naming `what` when `shape` does not fit `extents` (a static extent
// differs, or a size is negative).
void check_extents(std::span<const int64_t> extents, std::span<const int64_t> shape,
                   std::string_view what);
// Throws Error{kDtypeMismatch} / Error{kShapeMismatch} naming `what` when `t` is not `dtype`
// with a shape that fits `extents`.
void check_host(const HostTensor& t, DType dtype, std::span<const int64_t> extents,
                std::string_view what);
}  // namespace detail

template <class T, int64_t... E>
class Tensor {
 public:
  using element_type = T;
  static constexpr DType dtype = dtype_of<T>::value;
  static constexpr size_t rank = sizeof...(E);
  static constexpr std::array<int64_t, rank> extents = {E...};
  static constexpr bool is_static = ((E >= 0) && ...);
  static_assert(((E >= 0 || E == dyn) && ...), "an extent is a size >= 0 or etproof::dyn");

  // Zeros, of the type's shape (static extents only).
  Tensor() requires is_static : Tensor(std::array<int64_t, rank>{E...}) {}
  // Zeros, of `shape`. Error{kShapeMismatch} when a static extent differs or a size is negative.
  explicit Tensor(const std::array<int64_t, rank>& shape) {
    detail::check_extents(extents, shape, "tensor");
    host_.dtype = dtype;
    host_.shape.assign(shape.begin(), shape.end());
    host_.data.assign(host_.numel() * sizeof(T), 0);
  }
  // `values` (C order) of `shape`. Also Error{kShapeMismatch} when their count is not the
  // shape's element count.
  Tensor(const std::array<int64_t, rank>& shape, std::span<const T> values) : Tensor(shape) {
    if (values.size() != size())
      throw Error(ErrorKind::kShapeMismatch,
                  std::to_string(values.size()) + " values for a tensor of shape " +
                      shape_to_string(host_.shape) + " (" + std::to_string(size()) + " elements)",
                  "pass exactly one value per element, in C order");
    if (!values.empty()) std::memcpy(host_.data.data(), values.data(), host_.data.size());
  }
  // From a tensor of the same element type and rank. Implicit where its extents surely fit this
  // type's (a static extent into a dynamic one: Tensor<float, 4, 8> to Tensor<float, dyn, 8>);
  // explicit, and checked at run time (Error{kShapeMismatch}), where a dynamic extent meets a
  // static one (Tensor<float, dyn, 3> to Tensor<float, 1, 3>). Extents that can never fit do not
  // compile.
  template <int64_t... F>
    requires(sizeof...(F) == rank && !std::is_same_v<Tensor<T, F...>, Tensor> &&
             ((E == dyn || F == dyn || E == F) && ...))
  explicit(!((E == dyn || E == F) && ...)) Tensor(const Tensor<T, F...>& other) : host_(other.host()) {
    if constexpr (!((E == dyn || E == F) && ...)) detail::check_extents(extents, host_.shape, "tensor");
  }

  // From an untyped host tensor (a copy): Error{kDtypeMismatch} when its dtype is not T's,
  // Error{kShapeMismatch} when its shape does not fit; `what` names it in the message.
  static Tensor from_host(HostTensor t, std::string_view what = "tensor") {
    detail::check_host(t, dtype, extents, what);
    Tensor r(Unchecked{});
    r.host_ = std::move(t);
    return r;
  }

  const HostTensor& host() const { return host_; }
  std::array<int64_t, rank> shape() const {
    std::array<int64_t, rank> s{};
    for (size_t i = 0; i < rank; ++i) s[i] = host_.shape[i];
    return s;
  }
  size_t size() const { return host_.data.size() / sizeof(T); }
  T* data() { return reinterpret_cast<T*>(host_.data.data()); }
  const T* data() const { return reinterpret_cast<const T*>(host_.data.data()); }
  std::span<T> values() { return {data(), size()}; }
  std::span<const T> values() const { return {data(), size()}; }

  // The element at (i0, i1, …), one index per dimension (unchecked, as std::mdspan).
  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  T& operator()(I... idx) { return data()[offset(idx...)]; }
  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  const T& operator()(I... idx) const { return data()[offset(idx...)]; }

 private:
  struct Unchecked {};
  explicit Tensor(Unchecked) {}
  template <class... I>
  size_t offset(I... idx) const {
    const int64_t ix[] = {static_cast<int64_t>(idx)..., 0};
    size_t off = 0;
    for (size_t d = 0; d < rank; ++d) off = off * static_cast<size_t>(host_.shape[d]) + ix[d];
    return off;
  }
  HostTensor host_;
};

// What generated code gives to ModelHandle::open: the bundle it was generated from.
struct GeneratedFrom {
  std::string_view bundle_name;     // manifest name
  std::string_view program_sha256;  // the .pte's SHA-256 (manifest artifact.sha256), lower hex
};

// A bundle opened, verified and loaded for generated code. Moves only.
class ModelHandle {
 public:
  // Opens the bundle at `path` (its directory, manifest or .pte; bundle.h open_bundle, so its
  // files' sizes and SHA-256 are checked against its manifest), checks it is the bundle the code
  // was generated from — Error{kArtifactMismatch} naming both SHA-256 when the manifest's program
  // hash differs from `from.program_sha256` (a re-exported bundle: regenerate) — and loads it
  // (LoadedModel::load: Error{kBackendNotLinked} / kBackendUnavailable when a delegate it needs is
  // not registered or available in this binary, …).
  static ModelHandle open(const std::filesystem::path& path, const GeneratedFrom& from);

  const Bundle& bundle() const { return bundle_; }
  LoadedModel& model() { return model_; }
  // Delegate ids in the loaded program (sorted; from ExecuTorch's MethodMeta).
  const std::vector<std::string>& delegates() const { return model_.program_delegates(); }

 private:
  ModelHandle(Bundle b, LoadedModel m) : bundle_(std::move(b)), model_(std::move(m)) {}
  Bundle bundle_;
  LoadedModel model_;
};

// The bundle `name` that etproof_add_model copied beside the running executable:
// DIR_OF_EXECUTABLE/etproof-bundles/NAME (isolation.h executable_path). Error{kIo} when the
// executable's path cannot be read.
std::filesystem::path bundle_beside_executable(std::string_view name);

}  // namespace etproof
