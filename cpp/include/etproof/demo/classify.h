// etproof/demo/classify.h — the classification demo (`etproof classify`): choose the image-
// classification bundle to run among those in a directory, run a photo through it (the replay
// engine's open / check / load, etproof/replay.h prepare()), rank the labels.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/demo/image.h"

namespace etproof {

// The bundle `classify` runs, among the bundles in `dir` that carry labels and image
// preprocessing. With `backend` (and optionally `recipe`): that backend's bundle, recipe fp32 in
// float32 first, then any fp32, then the first. Without: the closest runnable bundle to the model
// the user evaluated — a delegated fp32 bundle first, then a portable one, then any other.
// Ties go to the backend listed first in the backend table (data/backends.json).
// Throws Error{kIo} (no such directory), Error{kCapabilityUnavailable} (no classifier bundle),
// Error{kInvalidArgument} (no bundle for that backend/recipe, naming what can run here),
// Error{kBackendUnavailable} (none of the matching bundles can run in this binary, with why).
[[nodiscard]] Bundle choose_classifier(const std::filesystem::path& dir, const std::string& backend,
                                       const std::string& recipe);

struct Classification {
  std::string image;
  std::string bundle, backend, recipe;
  std::vector<std::string> delegates;  // in the program, as loaded
  std::vector<Ranked> top;             // top k by probability (softmax of the logits, 0..1)
};

// Decodes `image` (image.h load_image, with the chosen bundle's preprocessing), runs it, and
// returns the top `k` labels. Errors: as choose_classifier, Error{kIo} for a missing or
// undecodable image, the replay engine's refusal (not-linked, load-failed, …) as its Error.
[[nodiscard]] Classification classify_image(const std::filesystem::path& image,
                                            const std::filesystem::path& dir,
                                            const std::string& backend, const std::string& recipe,
                                            size_t k);

[[nodiscard]] std::string to_text(const Classification& c);
// The same as one JSON object (`etproof classify --format json`): {"image", "bundle", "backend",
// "recipe", "delegates", "top": [{"label", "index", "probability" (softmax, 0..1)}]}.
[[nodiscard]] nlohmann::json to_json(const Classification& c);

}  // namespace etproof
