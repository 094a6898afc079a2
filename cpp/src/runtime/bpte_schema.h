// Private to the runtime layer: ExecuTorch's BundledProgram flatbuffer read into plain values
// (bpte_schema.cpp), for bpte.cpp. Apart because the flatbuffers release the schema's generated
// code needs (Debian's 2.0.8) and the one ExecuTorch's own headers declare (flatbuffers::Vector
// with a size type) cannot meet in one translation unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace etproof::bpte_detail {

struct Value {
  bool is_tensor = false;
  int8_t scalar_type = 0;        // ExecuTorch's ScalarType (the schema's executorch_flatbuffer.ScalarType)
  std::vector<int64_t> sizes;    // as recorded; a negative one is refused by the reader of this struct
  const uint8_t* data = nullptr;  // into the file's bytes
  size_t bytes = 0;
};

struct Case {
  std::vector<Value> inputs;
  std::vector<Value> expected_outputs;  // empty: a case for profiling only
};

struct Suite {
  std::string method;
  std::vector<Case> cases;
};

struct Parsed {
  const uint8_t* program = nullptr;  // into the file's bytes
  size_t program_size = 0;
  std::vector<Suite> suites;
};

// Reads `file` (a whole .bpte) after checking its identifier (BP08) and verifying the flatbuffer
// (flatbuffers::Verifier: every offset, vector and string inside the buffer). Pointers in the
// result point into `file`. Throws Error{kManifestInvalid} naming `origin` when it is not a
// BundledProgram, holds no program or no test suite.
Parsed parse_bpte(const std::vector<uint8_t>& file, const std::string& origin);

}  // namespace etproof::bpte_detail
