// Private: the parent's side of a worker process (etproof/isolation.h), used by LoadedModel.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/runtime/isolation.h"
#include "etproof/core/npy.h"

namespace etproof::detail {

// One worker process at a time, serving one bundle: started by load(), started again (and the
// program loaded again) by the first run() after a worker died. Not thread-safe (one LoadedModel
// is used from one thread at a time, as in-process). The destructor closes the socket, which
// ends the worker, and reaps it (SIGKILL after 2 s).
class WorkerClient {
 public:
  // `what`: "bundle 'NAME'", for messages.
  WorkerClient(Isolation isolation, std::filesystem::path manifest, std::string what);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  struct Loaded {
    std::vector<std::string> delegates;  // the program's delegate ids, as LoadedModel reads them
    std::vector<std::string> methods;    // the methods loaded, in the manifest's order
  };
  // Starts a worker and has it open, verify and load the bundle. Throws the worker's own Error
  // (as LoadedModel::load in-process would) or Error{kCrashed} (the worker died or timed out).
  Loaded load();
  // Runs `method` in the worker (starting a new one, and loading again, after a crash). Throws the
  // worker's Error (as LoadedModel::run in-process would) or Error{kCrashed}.
  std::map<std::string, HostTensor> run(const std::string& method,
                                        const std::map<std::string, HostTensor>& inputs);
  // BENCH: the whole benchmark of the bundle in a fresh worker, which is stopped after it.
  // `options` and the reply are the bench layer's (etproof/replay/bench.h: bench_options_json,
  // serve_bench): the worker hands them to WorkerServices::bench. Throws Error{kCrashed} when the
  // worker dies, the worker's Error when it has no bench service.
  nlohmann::json bench(const nlohmann::json& options);
  // HELLO: what the worker is and can run, {"arch", "features", "registered"} (the delegate ids
  // registered in it; etproof/emulation.h probe_emulated_worker). Throws Error{kCrashed}.
  nlohmann::json hello();

 private:
  void start();
  void stop();
  struct Reply;
  Reply request(uint32_t type, const std::string& head, const std::vector<uint8_t>& data,
                const std::string& doing);
  [[noreturn]] void died(const std::string& doing, bool timed_out);

  Isolation isolation_;
  std::filesystem::path manifest_;
  std::string what_;
  uint64_t memory_limit_ = 0;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool loaded_ = false;
};

}  // namespace etproof::detail
