// etproof-worker — runs one bundle's program for a parent etproof process (etproof/isolation.h).
// Started by the parent only: `etproof-worker --fd 3 --memory-limit BYTES`, with fd 3 a connected
// Unix socket. It links the same delegates as `etproof`, so what runs here is what would have run
// in-process.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "etproof/replay/bench.h"
#include "etproof/runtime/isolation.h"

int main(int argc, char** argv) {
  int fd = -1;
  uint64_t memory_limit = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[i + 1], &end, 10);
    if (end == argv[i + 1] || *end != '\0') fd = -2;
    if (flag == "--fd") fd = fd == -2 ? -2 : static_cast<int>(v);
    else if (flag == "--memory-limit") memory_limit = v;
    else fd = -2;
  }
  if (fd < 0) {
    std::fprintf(stderr,
                 "etproof-worker: started by etproof to run a program in a worker process "
                 "(etproof/isolation.h), not by hand\nusage: etproof-worker --fd N --memory-limit BYTES\n");
    return 2;
  }
  return etproof::worker_main(fd, memory_limit, {.bench = etproof::serve_bench});
}
