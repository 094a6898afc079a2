// classify IMAGE — the top five ImageNet classes of a photo, by the EfficientNet-Lite0 bundle
// built into this program (etproof_add_model in CMakeLists.txt). Everything model-specific comes
// from the generated class: the input's type, the preprocessing the export half applied, the
// labels, the backend and delegates. The output's form is `etproof classify`'s.
#include <cstdio>
#include <iostream>
#include <string>

#include "efficientnet_lite0.h"

using Model = etproof_models::EfficientnetLite0;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " IMAGE\n";
    return 2;
  }
  try {
    Model model = Model::open();  // the bundle copied beside this program, checked by its hash
    // etproof::Tensor<float, 1, 3, 224, 224>: the manifest's image input, preprocessed.
    const auto image = Model::preprocess(argv[1]);
    const Model::Outputs out = model.run(image);
    std::string delegates;
    for (const std::string& d : model.delegates()) delegates += (delegates.empty() ? "" : ", ") + d;
    std::cout << "image    " << argv[1] << "\n"
              << "bundle   " << Model::kBundleName << ": backend " << Model::kBackend << ", recipe "
              << Model::kRecipe << ", delegates "
              << (delegates.empty() ? "none (portable kernels)" : delegates) << "\n";
    for (const etproof::Ranked& r : Model::top_k(out.logits, 5))
      std::printf("  %.4f  %s (%zu)\n", r.probability, r.label.c_str(), r.index);
    return 0;
  } catch (const etproof::Error& e) {
    std::cerr << "error [" << etproof::to_string(e.kind()) << "]: " << e.cause()
              << "\nremedy: " << e.remedy() << "\n";
    return 2;
  }
}
