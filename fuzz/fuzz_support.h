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

#include "etproof/error.h"

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

}  // namespace etproof::fuzz

// Every JSON harness's entry point, with etproof::Error handled once: `body` runs the reader on
// the input; whatever else it throws escapes to libFuzzer (a crash). (Deep nesting and numbers out
// of double's range were crash classes until branch json-hardening; fuzz/crashes/{manifest,xfail,
// ledger}/ keep one input of each, replayed by fuzz/regress.sh.)
#define ETPROOF_FUZZ_JSON_TARGET(body)                                        \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  \
    try {                                                                     \
      body(data, size);                                                       \
    } catch (const ::etproof::Error&) {                                       \
    }                                                                         \
    return 0;                                                                 \
  }
