// etproof gen — a typed C++ API for a bundle: a class per model (docs/api.md).
#include <iostream>
#include <memory>
#include <string>

#include "common.h"
#include "etproof/codegen/codegen.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct GenOptions {
  std::string bundle, out_dir, class_name, namespace_name;
  bool namespace_given = false;  // --namespace
  bool global = false;           // --no-namespace
};

int run_gen(const GenOptions& a) {
  etproof::GenOptions o;
  o.class_name = a.class_name;
  if (a.global)
    o.namespace_name = "";
  else if (a.namespace_given)
    o.namespace_name = a.namespace_name;
  const etproof::GeneratedCode g = etproof::write_model_api(a.bundle, a.out_dir, o);
  std::cout << (g.written ? "wrote " : "up to date: ") << (fs::path(a.out_dir) / g.header_name).string()
            << " and " << g.source_name
            << ": class " << (o.namespace_name.empty() ? "" : o.namespace_name + "::") << g.class_name
            << "\nnext: compile " << g.source_name << " into your program and link etproof::codegen "
            << "(docs/api.md; or let CMake's etproof_add_model do it)\n";
  return 0;
}

}  // namespace

Subcommand register_gen(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  auto* sub = app.add_subcommand("gen", "write a typed C++ API for a bundle (a class per model; docs/api.md)");
  sub->add_option("BUNDLE", o->bundle, "bundle directory, manifest or .pte")->required();
  sub->add_option("--out", o->out_dir, "directory for the class's header and source, named after it in snake_case (EfficientnetLite0: efficientnet_lite0.h, .cpp; created)")->required();
  sub->add_option("--class", o->class_name, "the class's name (default: the model's name in CamelCase)");
  auto* ns = sub->add_option("--namespace", o->namespace_name,
                             "its namespace, e.g. myapp::models (default etproof_models)");
  sub->add_flag("--no-namespace", o->global, "declare the class in the global namespace")->excludes(ns);
  return {sub, [o, ns] {
            o->namespace_given = ns->count() > 0;
            return run_gen(*o);
          }};
}

}  // namespace etproof_cli
