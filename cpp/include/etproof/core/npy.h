// etproof/core/npy.h — host tensors and the .npy format (NumPy format versions 1.0–3.0).
//
// Spec: numpy.lib.format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
// Little-endian, C order only; Fortran order or big-endian data is refused (kNpyInvalid).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etproof {

// The dtypes the manifest allows (docs/manifest.md).
enum class DType { kFloat32, kFloat16, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool };

std::string_view to_string(DType d);               // "float32", …
std::optional<DType> dtype_from_string(std::string_view s);  // nullopt when unknown
size_t dtype_size(DType d);                         // bytes per element

// A dense, C-ordered host tensor that owns its bytes.
struct HostTensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;   // empty = scalar
  std::vector<uint8_t> data;    // numel() * dtype_size(dtype) bytes

  size_t numel() const;
  // Element i converted to double (float16 decoded per IEEE 754 binary16).
  double value_as_double(size_t i) const;
  // Copy converted to float64, element order preserved.
  std::vector<double> to_double() const;
};

// Reads a .npy file. Throws Error{kIo} when unreadable, Error{kNpyInvalid} when malformed or
// truncated (the message names the file and what was wrong), Error{kDtypeUnsupported} for a
// dtype outside DType.
HostTensor read_npy(const std::filesystem::path& path);

// Writes a .npy file (format 1.0) atomically (temporary file + rename). Throws Error{kIo}.
void write_npy(const std::filesystem::path& path, const HostTensor& t);

// "[1, 3, 224, 224]"
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace etproof
