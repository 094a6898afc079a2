// fuzz/fuzz_support.h — what every libFuzzer harness of fuzz/ shares (fuzz/README.md).
//
// A harness feeds its bytes to one of etproof's public readers. etproof::Error is the normal
// outcome of a bad input; anything else escaping the reader (another exception: std::terminate,
// an abort) and anything the sanitizers see (AddressSanitizer, UndefinedBehaviorSanitizer) is a
// crash: a real bug, which libFuzzer reports and fuzz/run.sh minimises.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"

namespace etproof::fuzz {

// The readers take a path: the input is written to an in-memory file (memfd) and read through
// /proc/self/fd/N, so nothing touches the disk and every run sees exactly its own bytes.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(::memfd_create(name, 0)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the file's content with `data`.
  const std::filesystem::path& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, off_t(done));
      if (n <= 0) std::abort();
      done += size_t(n);
    }
    return path_;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  int fd_;
  std::filesystem::path path_;
};

// ---- crash classes known and being fixed elsewhere ---------------------------------------------
// Two classes in the JSON readers (manifest, xfail, ledger) are known (issue 11 §2) and fixed on
// branch json-hardening: (1) a deeply nested document overflows the stack (the parsed document is
// copied or dumped recursively); (2) a number out of range for a double (1e400) escapes as
// nlohmann::json::out_of_range (id 406) instead of a typed error. Until that branch is merged, a
// harness skips inputs of class 1 and treats class 2 as an outcome, so fuzzing goes on finding
// *other* bugs. Build with -DETPROOF_FUZZ_SKIP_KNOWN=0 (CMake: ETPROOF_FUZZ_SKIP_KNOWN=OFF) to
// see them crash. json-hardening is merged and fuzz/CMakeLists.txt builds with it OFF: the
// harnesses reach those inputs and the readers refuse them as typed errors.
#ifndef ETPROOF_FUZZ_SKIP_KNOWN
#define ETPROOF_FUZZ_SKIP_KNOWN 1
#endif

// Deeper than this many open brackets ('[' or '{', counted without regard to strings, so the
// count only over-estimates) is class 1. The readers' own documents nest 6 deep at most.
inline constexpr int kKnownDepthLimit = 64;

inline bool known_deep_nesting(const uint8_t* data, size_t size) {
  if (!ETPROOF_FUZZ_SKIP_KNOWN) return false;
  int depth = 0, worst = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '[' || data[i] == '{') worst = std::max(worst, ++depth);
    else if ((data[i] == ']' || data[i] == '}') && depth > 0) --depth;
  }
  return worst > kKnownDepthLimit;
}

// Class 2: "number overflow parsing '1e400'" (nlohmann::json::out_of_range, id 406).
inline bool known_number_overflow(const nlohmann::json::exception& e) {
  return ETPROOF_FUZZ_SKIP_KNOWN && e.id == 406;
}

}  // namespace etproof::fuzz

// Every harness's entry point, with the known classes and etproof::Error handled once: `body`
// runs the reader on the input; whatever else it throws escapes to libFuzzer (a crash).
#define ETPROOF_FUZZ_JSON_TARGET(body)                                        \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  \
    if (::etproof::fuzz::known_deep_nesting(data, size)) return -1;           \
    try {                                                                     \
      body(data, size);                                                       \
    } catch (const ::etproof::Error&) {                                       \
    } catch (const ::nlohmann::json::out_of_range& e) {                      \
      if (!::etproof::fuzz::known_number_overflow(e)) throw;                  \
    }                                                                         \
    return 0;                                                                 \
  }
