// etproof/image.h — the classification demo's C++ side: decode a photo, apply the manifest's
// preprocessing. Ranking labels (top_k) is core: etproof/labels.h.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "etproof/labels.h"  // Ranked, top_k (core)
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

}  // namespace etproof
