// etproof/core/labels.h — ranking a classifier's output by the manifest's labels (Manifest::labels).
// Core: `etproof run` and the classification demo both use it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/npy.h"

namespace etproof {

struct Ranked {
  size_t index = 0;        // flat index into the logits
  std::string label;       // names[index], or "class INDEX" past the end of names
  double probability = 0;  // softmax over the logits, 0..1
};

// Softmax over a 1-D (or [1, N]) logits tensor of any numeric dtype, top k by probability (ties:
// the lower index first). NaN logits get probability 0; +inf logits share the mass. Throws
// Error{kShapeMismatch} for any other shape.
std::vector<Ranked> top_k(const HostTensor& logits, const std::vector<std::string>& names,
                          size_t k);

// [{"label", "index", "probability"}] in rank order, as `run` and `classify` print them in JSON.
[[nodiscard]] nlohmann::json to_json(const std::vector<Ranked>& ranked);

}  // namespace etproof
