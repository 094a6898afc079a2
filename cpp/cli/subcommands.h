// cpp/cli/subcommands.h — the etproof subcommands, one file each (cpp/cli/cmd_NAME.cpp: its
// options struct, its registration and its run function), and their table.
//
// A new subcommand: its cmd_NAME.cpp (CMake globs cpp/cli/*.cpp), its declaration and its line
// in kSubcommands below, and its paragraph in the docs.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace etproof_cli {

// A registered subcommand: its CLI11 app, and what runs when it was the one parsed (returning
// the exit code: 0 success, 1 drift or a failing matrix, 2 an error). `run` is empty for one that
// main handles before parsing (export).
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

using RegisterFn = Subcommand (*)(CLI::App& app);

Subcommand register_backends(CLI::App& app);
Subcommand register_export(CLI::App& app);
Subcommand register_inspect(CLI::App& app);
Subcommand register_gen(CLI::App& app);
Subcommand register_run(CLI::App& app);
Subcommand register_parity(CLI::App& app);
Subcommand register_attribute(CLI::App& app);
Subcommand register_matrix(CLI::App& app);
Subcommand register_coverage(CLI::App& app);
Subcommand register_rejudge(CLI::App& app);
Subcommand register_measure_tolerances(CLI::App& app);
Subcommand register_bench(CLI::App& app);
Subcommand register_classify(CLI::App& app);

// The table, in the order `etproof --help` lists them.
inline const std::vector<RegisterFn> kSubcommands = {
    register_backends,
    register_export,
    register_inspect,
    register_gen,
    register_run,
    register_parity,
    register_attribute,
    register_matrix,
    register_coverage,
    register_rejudge,
    register_measure_tolerances,
    register_bench,
    register_classify,
};

// `etproof export ARGS…`: the export half's own command line, handed over whole (cmd_export.cpp).
int run_export(int argc, char** argv);

}  // namespace etproof_cli
