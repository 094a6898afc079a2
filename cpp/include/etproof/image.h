// etproof/image.h — the classification demo's C++ side: decode a photo, apply the manifest's
// preprocessing, and rank labels.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "etproof/manifest.h"
#include "etproof/npy.h"

namespace etproof {

// Decodes an image (stb_image: JPEG, PNG, BMP, …) as 8-bit RGB, resizes the shorter side to
// pp.resize_shorter (bilinear, stb_image_resize), center-crops pp.crop_h × pp.crop_w, maps
// x = (pixel − mean) / std per channel and lays it out as `spec` says (nchw or nhwc, float32,
// with a leading batch dimension of 1 when the spec's rank is 4).
// Throws Error{kIo} (unreadable / undecodable, with stb's reason), Error{kShapeMismatch}.
HostTensor load_image(const std::filesystem::path& image, const ImagePreprocessing& pp,
                      const TensorSpec& spec);

struct Ranked {
  size_t index = 0;
  std::string label;
  double probability = 0;  // softmax over the logits, 0..1
};

// Softmax over a 1-D (or [1, N]) logits tensor, top k by probability.
std::vector<Ranked> top_k(const HostTensor& logits, const std::vector<std::string>& names,
                          size_t k);

}  // namespace etproof
