// etproof classify — classify a photo with a demo bundle.
#include <iostream>
#include <memory>
#include <string>

#include "common.h"
#include "etproof/demo/classify.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct ClassifyOptions {
  std::string image, backend, recipe, bundles_dir;
  size_t top = 5;
  FormatOption format;
};

int run_classify(const ClassifyOptions& o) {
  const fs::path dir = o.bundles_dir.empty() ? default_bundles_dir() : fs::path(o.bundles_dir);
  const etproof::Classification c = etproof::classify_image(o.image, dir, o.backend, o.recipe, o.top);
  std::cout << (o.format.format == "json" ? etproof::to_json(c).dump(2) + "\n" : etproof::to_text(c));
  return 0;
}

}  // namespace

Subcommand register_classify(CLI::App& app) {
  auto o = std::make_shared<ClassifyOptions>();
  auto* sub = app.add_subcommand("classify", "classify a photo with a demo bundle");
  sub->add_option("IMAGE", o->image, "JPEG/PNG/BMP image")->required();
  sub->add_option("--backend", o->backend, "export key of the bundle to use (e.g. xnnpack)");
  sub->add_option("--recipe", o->recipe, "recipe of the bundle to use (e.g. fp32)");
  sub->add_option("--bundles", o->bundles_dir, "bundle directory (default: <etproof's dir>/demo/bundles)");
  sub->add_option("--top", o->top, "how many classes to print")->check(CLI::PositiveNumber);
  add_format_option(sub, o->format,
                    std::vector<FormatChoice>{{"text", "the bundle run and the top labels"},
                                              {"json", "the same as one JSON object"}});
  add_records_nothing_flag(sub);
  return {sub, [o] { return run_classify(*o); }};
}

}  // namespace etproof_cli
