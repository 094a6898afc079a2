// etproof — the command-line front end of the runtime half (docs/design.md §8): the app, its
// global options and the dispatch to the subcommand parsed (cpp/cli/subcommands.h; each in its own
// cpp/cli/cmd_NAME.cpp).
//
// Exit codes: 0 success / parity passed / matrix passed; 1 drift (parity) or a failing matrix
// (see Matrix::exit_code: drift, a broken column, no bound, nothing measured, or a column --require
// names that did not run here); 2 an error (printed as "error [kind]: cause" + "remedy: …").
// `etproof export …` hands its arguments to the export half and returns its exit code.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "etproof/runtime/runtime_log.h"
#include "format.h"
#include "subcommands.h"

namespace fs = std::filesystem;
using etproof::Error;
using etproof::ErrorKind;
using namespace etproof_cli;

namespace {

int run_cli(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "export") return run_export(argc - 2, argv + 2);

  g_command_line = etproof::command_line_text(argc, argv);
  CLI::App app{"etproof — export PyTorch models through ExecuTorch and prove the numbers did "
               "not change (runtime half)"};
  app.formatter(std::make_shared<WrappingFormatter>());  // before the subcommands, which copy it
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("etproof ") + ETPROOF_VERSION);

  std::vector<Subcommand> subcommands;
  for (RegisterFn add : kSubcommands) subcommands.push_back(add(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  for (const Subcommand& s : subcommands)
    if (s.app->parsed() && s.run) return s.run();
  std::cerr << app.help();
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  etproof::install_runtime_log_filter();
  etproof::prepare_backend_environment();
  try {
    return run_cli(argc, argv);
  } catch (const Error& e) {
    print_error(e);
    return kExitError;
  } catch (const std::bad_alloc&) {
    // Not a bug: the machine or the process's limit ran out (a very large input or bundle file).
    // The stack is unwound, so what the command held is freed; should even this message not fit,
    // a fixed one is written.
    try {
      print_error(etproof::out_of_memory_error(std::string("in etproof ") + (argc > 1 ? argv[1] : "")));
    } catch (...) {
      std::fputs("error [out-of-memory]: out of memory (std::bad_alloc)\n", stderr);
    }
    return kExitError;
  } catch (const fs::filesystem_error& e) {
    // A filesystem call the library does not check itself (each one it knows of is an io Error
    // naming its path): still an io error with its path, never "a bug".
    std::string paths = e.path1().string();
    if (!e.path2().empty()) paths += ", " + e.path2().string();
    print_error(Error(ErrorKind::kIo, (paths.empty() ? "" : paths + ": ") + e.code().message() + " (" + e.what() + ")",
                      "check the path, its permissions and free space"));
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "error [internal]: " << e.what()
              << "\nremedy: this is a bug in etproof; please report it with the command line\n";
    return kExitError;
  } catch (...) {
    std::cerr << "error [internal]: unknown exception\n";
    return kExitError;
  }
}
