// fuzz/bpte_fuzz.cpp — ExecuTorch's BundledProgram reader (runtime/bpte_schema.h: the .bpte's
// flatbuffer verified and read) on arbitrary bytes.
//
// What parse_bpte accepts is what materialize_bpte builds a bundle from: every pointer it returns
// (the program, each tensor's data) must lie inside the buffer with its whole length, and every
// suite and case be walkable. Refusals are etproof::Error (manifest-invalid); anything else
// (a crash, an out-of-bounds read under ASan, another exception) is a finding.
#include <cstdlib>
#include <vector>

#include "etproof/core/error.h"
#include "runtime/bpte_schema.h"

namespace {
void inside(const uint8_t* p, size_t n, const std::vector<uint8_t>& buf) {
  if (n == 0) return;
  const uint8_t* begin = buf.data();
  const uint8_t* end = begin + buf.size();
  if (p < begin || p > end || n > size_t(end - p)) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> buf(data, data + size);
  etproof::bpte_detail::Parsed parsed;
  try {
    parsed = etproof::bpte_detail::parse_bpte(buf, "fuzz.bpte");
  } catch (const etproof::Error& e) {
    if (e.kind() != etproof::ErrorKind::kManifestInvalid) std::abort();
    return 0;
  }
  if (parsed.program_size == 0 || parsed.suites.empty()) std::abort();  // refused, never returned
  inside(parsed.program, parsed.program_size, buf);
  volatile uint8_t sink = 0;
  for (const auto& s : parsed.suites)
    for (const auto& c : s.cases)
      for (const auto* vs : {&c.inputs, &c.expected_outputs})
        for (const auto& v : *vs) {
          inside(v.data, v.bytes, buf);
          for (size_t i = 0; i < v.bytes; i += 64) sink = sink + v.data[i];
        }
  (void)sink;
  return 0;
}
