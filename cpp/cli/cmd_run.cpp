// etproof run — run a bundle on .npy inputs.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/runtime/run.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct RunOptions {
  std::string bundle;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string out_dir;
  std::vector<std::string> methods;
  FormatOption format;
};

int run_run(const RunOptions& o) {
  std::map<std::string, fs::path> inputs;
  for (const std::string& arg : o.inputs) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      throw Error(ErrorKind::kInvalidArgument, "--input \"" + arg + "\" is not NAME=FILE.npy",
                  "pass each input as --input NAME=FILE.npy");
    if (!inputs.emplace(arg.substr(0, eq), arg.substr(eq + 1)).second)
      throw Error(ErrorKind::kInvalidArgument, "input \"" + arg.substr(0, eq) + "\" given twice",
                  "pass each input once");
  }
  const etproof::RunResult r = etproof::run_bundle(o.bundle, inputs, o.out_dir, o.methods);
  std::cout << (o.format.format == "json" ? etproof::to_json(r).dump(2) + "\n" : etproof::to_text(r));
  return 0;
}

}  // namespace

Subcommand register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "run a bundle on .npy inputs");
  sub->add_option("BUNDLE", o->bundle, "bundle directory or manifest")->required();
  sub->add_option("--input", o->inputs, "NAME=FILE.npy, once per input (none for a program without inputs)");
  sub->add_option("--out", o->out_dir, "write NAME.npy per output here (METHOD.NAME.npy with several methods)");
  add_method_option(sub, o->methods, "run (each gets the --input values named as its inputs)");
  add_format_option(sub, o->format,
                    std::vector<FormatChoice>{{"text", "each output's dtype, shape, range, first values and top labels"},
                                              {"json", "the same per output as one JSON object"}});
  add_records_nothing_flag(sub);
  return {sub, [o] { return run_run(*o); }};
}

}  // namespace etproof_cli
