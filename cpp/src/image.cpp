// The classification demo's C++ side: decode (stb_image), resize, center-crop, normalize per the
// manifest's preprocessing, rank labels. libstb provides stb_image's implementation; this file
// only includes its declarations.
//
// Resizing is not stb_image_resize: its triangle filter aborts the process on an assertion
// (stbir__normalize_downsample_coefficients, `total < 1.1f`) for ordinary downscales such as
// chelsea.png's 451×300 → 385×256 (Debian libstb 0.0~git20220908). Instead this file resamples
// exactly as PIL's Image.resize(BILINEAR) does — the export half's preprocessing: a separable
// triangle filter whose support widens with the downscale factor (antialiased), horizontal pass
// then vertical, each rounded to 8 bits.
#include "etproof/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include <stb_image.h>

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

// One output pixel's source span and normalized weights (PIL's precompute_coeffs, bilinear).
struct Taps {
  int first = 0;
  std::vector<double> w;
};

std::vector<Taps> triangle_taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle's support is 1 source pixel
  std::vector<Taps> taps(static_cast<size_t>(out_size));
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    Taps& t = taps[static_cast<size_t>(o)];
    t.first = lo;
    double sum = 0;
    for (int i = lo; i < hi; ++i) {
      const double x = std::fabs((i - center + 0.5) / filter_scale);
      const double w = x < 1 ? 1 - x : 0;
      t.w.push_back(w);
      sum += w;
    }
    if (sum > 0)
      for (double& w : t.w) w /= sum;
  }
  return taps;
}

unsigned char to_u8(double v) {
  return static_cast<unsigned char>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
}

// RGB8 w×h -> RGB8 rw×rh, PIL BILINEAR.
std::vector<unsigned char> resize_bilinear(const unsigned char* src, int w, int h, int rw, int rh) {
  std::vector<unsigned char> mid(static_cast<size_t>(rw) * h * 3);
  if (rw == w) {
    std::memcpy(mid.data(), src, mid.size());
  } else {
    const auto taps = triangle_taps(w, rw);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < rw; ++x) {
        const Taps& t = taps[static_cast<size_t>(x)];
        for (int c = 0; c < 3; ++c) {
          double acc = 0;
          for (size_t k = 0; k < t.w.size(); ++k)
            acc += t.w[k] * src[(static_cast<size_t>(y) * w + t.first + k) * 3 + c];
          mid[(static_cast<size_t>(y) * rw + x) * 3 + c] = to_u8(acc);
        }
      }
  }
  if (rh == h) return mid;
  std::vector<unsigned char> out(static_cast<size_t>(rw) * rh * 3);
  const auto taps = triangle_taps(h, rh);
  for (int y = 0; y < rh; ++y) {
    const Taps& t = taps[static_cast<size_t>(y)];
    for (int x = 0; x < rw; ++x)
      for (int c = 0; c < 3; ++c) {
        double acc = 0;
        for (size_t k = 0; k < t.w.size(); ++k)
          acc += t.w[k] * mid[((t.first + k) * static_cast<size_t>(rw) + x) * 3 + c];
        out[(static_cast<size_t>(y) * rw + x) * 3 + c] = to_u8(acc);
      }
  }
  return out;
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
    std::error_code ec;
    throw Error(ErrorKind::kIo,
                "cannot decode image " + image.string() + ": " + (why ? why : "unknown reason"),
                std::filesystem::exists(image, ec)
                    ? "pass a JPEG, PNG, BMP, TGA or GIF file"
                    : "check the path; the file does not exist");
  }

  // Shorter side -> resize_shorter, aspect kept, the longer side rounded to the nearest pixel
  // (as the export half does).
  const int64_t s = pp.resize_shorter;
  int rw, rh;
  if (w <= h) {
    rw = static_cast<int>(s);
    rh = std::max(1, static_cast<int>(std::lround(static_cast<double>(h) * s / w)));
  } else {
    rh = static_cast<int>(s);
    rw = std::max(1, static_cast<int>(std::lround(static_cast<double>(w) * s / h)));
  }
  if (rw < pp.crop_w || rh < pp.crop_h)
    throw Error(ErrorKind::kShapeMismatch,
                "resized image " + std::to_string(rw) + "x" + std::to_string(rh) +
                    " is smaller than the crop " + std::to_string(pp.crop_w) + "x" +
                    std::to_string(pp.crop_h),
                "re-export the bundle; resize_shorter must be at least the crop size");
  const std::vector<unsigned char> resized = resize_bilinear(pixels.get(), w, h, rw, rh);

  // Center crop, offsets floor((size - crop) / 2).
  const int top = static_cast<int>((rh - pp.crop_h) / 2);
  const int left = static_cast<int>((rw - pp.crop_w) / 2);
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

}  // namespace etproof
