// etproof/runtime/export_half.h — the runtime half's bridge to the export half (Python, `python -m
// etproof`): which interpreter, its probe's answer for `etproof backends`, and `etproof export`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

// The export half's Python interpreter: $ETPROOF_PYTHON when set and non-empty, else the one
// configured at build time (ETPROOF_PYTHON, the project's .venv).
[[nodiscard]] std::string export_python();

// The command a remedy names for running etproof, so that a user can run it as written: $ETPROOF_PROG
// when set (the installed launcher, etproof.cli.launcher, sets "etproof"), else this executable
// when it is etproof's own (etproof, etproof-nodelegate), relative to the working directory when
// under it ("build/etproof"); "etproof" otherwise (a program of the user's linking the library).
[[nodiscard]] std::string etproof_command();

// The export half's own command COMMAND (demo, golden-set, test-bundles, plot-attribution), which
// the C++ CLI does not forward, as a user can run it: "<export_python()> -m etproof COMMAND".
[[nodiscard]] std::string export_half_command(const std::string& command);

// The export half's probe (`python -m etproof probe --json`, cached by the Python side): its
// "export" list, or nullopt with the reason it could not be had in `why_not` (interpreter
// missing, the probe failing, JSON without an "export" list).
[[nodiscard]] std::optional<nlohmann::json> query_export_half(std::string& why_not);

// `etproof export ARGS…`: runs `python -m etproof export ARGS…` in a child process with this
// process's standard streams and returns its exit status (2 when it was killed by a signal or
// could not be started). Throws Error{kCapabilityUnavailable} when the interpreter is missing,
// Error{kIo} when fork/waitpid fail.
int run_export_half(int argc, char** argv);

// `python -m etproof COMMAND ARGS…` (export, plot-attribution, …) the same way: a child process
// with this process's standard streams (its standard output sent to standard error when
// `stdout_to_stderr`: a caller whose own output is JSON); its exit status, 2 when killed by a
// signal or not started. Throws as run_export_half.
int run_export_half_command(const std::string& command, const std::vector<std::string>& args,
                            bool stdout_to_stderr = false);

}  // namespace etproof
