// fuzz/npy_fuzz.cpp — the .npy reader (etproof/npy.h) on arbitrary bytes.
//
// What read_npy accepts is used as a golden is: every element converted to double, and written
// back (write_npy), which must give a file that reads back to the same tensor.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "etproof/core/npy.h"
#include "fuzz_support.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static etproof::fuzz::MemFile file("npy");
  static const fs::path back = fs::temp_directory_path() / ("etproof-fuzz-npy-" + std::to_string(::getpid()) + ".npy");
  etproof::HostTensor t;
  try {
    t = etproof::read_npy(file.write(data, size));
  } catch (const etproof::Error&) {
    return 0;
  }
  // Accepted: the data section is exactly numel * element size (the reader's promise).
  if (t.data.size() != t.numel() * etproof::dtype_size(t.dtype)) std::abort();
  (void)etproof::shape_to_string(t.shape);
  const std::vector<double> v = t.to_double();
  if (v.size() != t.numel()) std::abort();
  // Round trip, for tensors small enough to write quickly.
  if (t.data.size() <= (1u << 16)) {
    etproof::write_npy(back, t);
    const etproof::HostTensor again = etproof::read_npy(back);
    if (again.dtype != t.dtype || again.shape != t.shape || again.data != t.data) std::abort();
  }
  return 0;
}
