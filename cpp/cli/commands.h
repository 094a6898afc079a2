// cpp/cli/commands.h — the etproof CLI's commands (cpp/cli/commands.cpp), called by its option
// parsing (cpp/cli/main.cpp): one function per subcommand, printing its report and returning the
// exit code (0 success, 1 drift or a failing matrix, 2 an error).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/replay/bench.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/runtime/isolation.h"
#include "etproof/evidence/ledger.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/tolerances.h"
#include "etproof/render/tolerances.h"

namespace etproof_cli {

namespace fs = std::filesystem;
using etproof::Error;
using etproof::ErrorKind;

inline constexpr int kExitError = 2;
extern std::string g_command_line;  // the command as typed, recorded with each record

struct LedgerOption {
  std::string file;  // --ledger FILE
  bool off = false;  // --no-ledger
};

struct AttributeArgs {
  std::string case_id, output, plot, model, bisect_out;
  bool json = false, bisect = false;
};

void print_error(const Error& e);

std::string json_text(const nlohmann::json& doc);

fs::path default_bundles_dir();

bool record_evidence(const LedgerOption& o, const std::string& kind,
                     const std::function<std::vector<nlohmann::json>(const etproof::RecordContext&)>& build);

fs::path default_probe_dir();

int cmd_backends(bool json, bool runtime_only, const std::string& probe_dir,
                 const LedgerOption& ledger, const std::vector<std::string>& emulate = {});

int cmd_export(int argc, char** argv);

int cmd_inspect(const std::string& path, bool json);

int cmd_gen(const std::string& bundle, const std::string& out_dir, const std::string& class_name,
            const std::optional<std::string>& namespace_name);

int cmd_run(const std::string& path, const std::vector<std::string>& input_args,
            const std::string& out_dir, const std::vector<std::string>& methods);

std::string with_bound_source(const std::string& text, const etproof::Bound& bound);

int cmd_parity(const std::string& path, bool json, const etproof::BoundOverride& caller,
               const std::optional<etproof::Budget>& budget, const std::vector<std::string>& methods,
               LedgerOption ledger, bool allow_edited_goldens, const etproof::Isolation& isolation,
               bool verbose, const std::string& emulate = "");

int cmd_attribute(const std::vector<std::string>& paths, const AttributeArgs& args, const etproof::BoundOverride& caller,
                  const etproof::Isolation& isolation);

int cmd_bench(const std::vector<std::string>& args, bool json, bool markdown, const etproof::BenchOptions& o,
              const LedgerOption& ledger, const etproof::Isolation& isolation, const std::string& emulate = "");

void check_writable(const std::string& file, const std::string& what, const std::string& flag);

int cmd_matrix(const std::vector<std::string>& dir_args, bool json, bool markdown,
               const std::string& junit, const std::string& html, const etproof::BoundOverride& caller,
               const std::optional<etproof::Budget>& budget, size_t jobs,
               const std::vector<std::string>& methods, const LedgerOption& ledger,
               const etproof::Isolation& isolation, const std::optional<etproof::BenchOptions>& bench,
               const std::vector<std::string>& required, bool require_all,
               const std::vector<std::string>& emulate = {});

int cmd_coverage(const etproof::CoverageRequest& a);

int cmd_measure_tolerances(const std::vector<std::string>& dir_args, bool json, bool markdown,
                           const std::string& junit, double margin,
                           const etproof::BoundOverride& caller, size_t jobs,
                           bool own_reference);

int cmd_classify(const std::string& image, const std::string& backend, const std::string& recipe,
                 const std::string& dir_arg, size_t k);

}  // namespace etproof_cli
