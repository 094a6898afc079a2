// The classification demo's C++ side: decode (stb_image), resize (stb_image_resize, triangle =
// bilinear filter), center-crop, normalize per the manifest's preprocessing, rank labels.
// libstb provides the implementations; this file only includes the declarations.
#include "etproof/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include <stb_image.h>
#include <stb_image_resize.h>

#include "etproof/error.h"

namespace etproof {

namespace {

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

// Which axis of the spec holds the channels: "nchw" / "nhwc" from the manifest, or derived from
// the shape when the manifest does not say and only one reading of the shape is possible.
bool channels_first(const TensorSpec& spec, size_t rank) {
  if (spec.layout) {
    if (*spec.layout == "nchw") return true;
    if (*spec.layout == "nhwc") return false;
    throw Error(ErrorKind::kShapeMismatch,
                "input \"" + spec.name + "\" has layout \"" + *spec.layout +
                    "\"; image preprocessing knows nchw and nhwc",
                "re-export the bundle with an nchw or nhwc image input");
  }
  const int64_t first = spec.shape[rank - 3];
  const int64_t last = spec.shape[rank - 1];
  if (first == 3 && last != 3) return true;
  if (last == 3 && first != 3) return false;
  throw Error(ErrorKind::kShapeMismatch,
              "input \"" + spec.name + "\" " + shape_to_string(spec.shape) +
                  " has no recorded layout and its shape does not say where the channels are",
              "re-export the bundle so the manifest records the input's layout (nchw or nhwc)");
}

}  // namespace

HostTensor load_image(const std::filesystem::path& image, const ImagePreprocessing& pp,
                      const TensorSpec& spec) {
  if (spec.dtype != DType::kFloat32)
    throw Error(ErrorKind::kDtypeUnsupported,
                "input \"" + spec.name + "\" is " + std::string(to_string(spec.dtype)) +
                    "; image preprocessing produces float32",
                "use a bundle whose image input is float32");
  const size_t rank = spec.shape.size();
  if (rank != 3 && rank != 4)
    throw Error(ErrorKind::kShapeMismatch,
                "input \"" + spec.name + "\" " + shape_to_string(spec.shape) +
                    " is not an image tensor (rank 3 or 4)",
                "use a bundle whose image input is [N, C, H, W] or [N, H, W, C]");
  if (pp.resize_shorter <= 0 || pp.crop_h <= 0 || pp.crop_w <= 0)
    throw Error(ErrorKind::kManifestInvalid,
                "image preprocessing has resize_shorter " + std::to_string(pp.resize_shorter) +
                    ", crop " + std::to_string(pp.crop_h) + "x" + std::to_string(pp.crop_w),
                "re-export the bundle with positive resize and crop sizes");
  const bool nchw = channels_first(spec, rank);

  // Check the spec's shape against what the preprocessing produces before decoding anything.
  std::vector<int64_t> shape;
  if (rank == 4) shape.push_back(1);
  if (nchw)
    shape.insert(shape.end(), {3, pp.crop_h, pp.crop_w});
  else
    shape.insert(shape.end(), {pp.crop_h, pp.crop_w, 3});
  for (size_t i = 0; i < rank; ++i)
    if (spec.shape[i] != -1 && spec.shape[i] != shape[i])
      throw Error(ErrorKind::kShapeMismatch,
                  "input \"" + spec.name + "\" is " + shape_to_string(spec.shape) +
                      " but the manifest's preprocessing produces " + shape_to_string(shape),
                  "re-export the bundle; its preprocessing and input shape disagree");

  int w = 0, h = 0, c = 0;
  std::unique_ptr<unsigned char, StbFree> pixels(stbi_load(image.c_str(), &w, &h, &c, 3));
  if (!pixels) {
    const char* why = stbi_failure_reason();
    throw Error(ErrorKind::kIo,
                "cannot decode image " + image.string() + ": " + (why ? why : "unknown reason"),
                std::filesystem::exists(image)
                    ? "pass a JPEG, PNG, BMP, TGA or GIF file"
                    : "check the path; the file does not exist");
  }

  // Shorter side -> resize_shorter, aspect kept (torchvision's Resize(int): the longer side is
  // truncated, not rounded).
  const int64_t s = pp.resize_shorter;
  int rw, rh;
  if (w <= h) {
    rw = static_cast<int>(s);
    rh = static_cast<int>(s * h / w);
  } else {
    rh = static_cast<int>(s);
    rw = static_cast<int>(s * w / h);
  }
  if (rw < pp.crop_w || rh < pp.crop_h)
    throw Error(ErrorKind::kShapeMismatch,
                "resized image " + std::to_string(rw) + "x" + std::to_string(rh) +
                    " is smaller than the crop " + std::to_string(pp.crop_w) + "x" +
                    std::to_string(pp.crop_h),
                "re-export the bundle; resize_shorter must be at least the crop size");
  std::vector<unsigned char> resized(static_cast<size_t>(rw) * rh * 3);
  if (!stbir_resize_uint8_generic(pixels.get(), w, h, 0, resized.data(), rw, rh, 0, 3,
                                  STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                                  STBIR_FILTER_TRIANGLE, STBIR_COLORSPACE_LINEAR, nullptr))
    throw Error(ErrorKind::kIo, "cannot resize image " + image.string(),
                "pass a smaller image");

  // Center crop (torchvision's CenterCrop: offsets rounded).
  const int top = static_cast<int>(std::lround((rh - pp.crop_h) / 2.0));
  const int left = static_cast<int>(std::lround((rw - pp.crop_w) / 2.0));
  const int ch = static_cast<int>(pp.crop_h), cw = static_cast<int>(pp.crop_w);

  HostTensor t;
  t.dtype = DType::kFloat32;
  t.shape = shape;
  t.data.resize(static_cast<size_t>(ch) * cw * 3 * sizeof(float));
  auto* out = reinterpret_cast<float*>(t.data.data());
  const double span = pp.value_max - pp.value_min;
  for (int y = 0; y < ch; ++y)
    for (int x = 0; x < cw; ++x)
      for (int k = 0; k < 3; ++k) {
        const unsigned char p = resized[(static_cast<size_t>(top + y) * rw + (left + x)) * 3 + k];
        const double v = pp.value_min + span * (p / 255.0);
        const float f = static_cast<float>((v - pp.mean[k]) / pp.std[k]);
        const size_t idx = nchw ? (static_cast<size_t>(k) * ch + y) * cw + x
                                : (static_cast<size_t>(y) * cw + x) * 3 + k;
        out[idx] = f;
      }
  return t;
}

std::vector<Ranked> top_k(const HostTensor& logits, const std::vector<std::string>& names,
                          size_t k) {
  const auto& sh = logits.shape;
  const bool ok = sh.size() == 1 || (sh.size() == 2 && sh[0] == 1);
  if (!ok)
    throw Error(ErrorKind::kShapeMismatch,
                "logits " + shape_to_string(sh) + " are not [N] or [1, N]",
                "rank the output of a single-image classifier");
  const std::vector<double> v = logits.to_double();
  if (v.empty()) return {};
  // Numerically stable softmax: subtract the largest logit before exponentiating.
  double mx = -std::numeric_limits<double>::infinity();
  for (double x : v)
    if (!std::isnan(x)) mx = std::max(mx, x);
  std::vector<double> p(v.size());
  double sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]))
      p[i] = 0;
    else if (std::isinf(mx))  // +inf logits share the mass; all -inf: nothing to rank
      p[i] = (mx > 0 && v[i] == mx) ? 1.0 : 0.0;
    else
      p[i] = std::exp(v[i] - mx);
    sum += p[i];
  }
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t n = std::min(k, v.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<Ranked> out;
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = order[i];
    Ranked r;
    r.index = idx;
    r.label = idx < names.size() ? names[idx] : "class " + std::to_string(idx);
    r.probability = sum > 0 ? p[idx] / sum : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace etproof
