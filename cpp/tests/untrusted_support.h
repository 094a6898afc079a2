// Shared by the unit and integration halves of untrusted_input_test.cpp: deeply nested
// documents, a small-stack runner, and a directory snapshot.
#pragma once

#include <pthread.h>

#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "test_support.h"

namespace etproof::testing {

inline constexpr size_t kDeep = 100000;  // the depth issue 11 found crashing parity, inspect and matrix

// `levels` nested arrays: "[[[…]]]".
inline std::string nested_arrays(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// Runs `fn` on a thread with a 1 MiB stack, an eighth of glibc's default: what walked a document
// 100,000 levels deep recursively (nlohmann's copy, dump) overflowed even 8 MiB, and at 1 MiB a
// regression shows on any build; nothing that reads a manifest needs more. Rethrows what fn threw.
inline void on_small_stack(const std::function<void()>& fn) {
  struct Call {
    const std::function<void()>* fn;
    std::exception_ptr thrown;
  } call{&fn, nullptr};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, size_t(1) << 20), 0);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        auto* c = static_cast<Call*>(p);
        try {
          (*c->fn)();
        } catch (...) {
          c->thrown = std::current_exception();
        }
        return nullptr;
      },
      &call);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(rc, 0);
  pthread_join(thread, nullptr);
  if (call.thrown) std::rethrow_exception(call.thrown);
}

// Every file under `dir` with its bytes: what a case compares to show nothing was written.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[std::filesystem::relative(e.path(), dir).string()] = e.is_regular_file() ? slurp(e.path()) : "<dir>";
  return files;
}

}  // namespace etproof::testing
