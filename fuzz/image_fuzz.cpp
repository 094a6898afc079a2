// fuzz/image_fuzz.cpp — the photo decoders (etproof/image.h decode_image: libjpeg-turbo for
// anything starting FF D8 FF, stb_image for the rest) and Pillow's resize on what they accept.
//
// What decode_image accepts must be width × height × 3 bytes; preprocess_rgb8 then resizes and
// crops it (sizes from the input's last two bytes, kept small) into a tensor of exactly the
// spec's element count, every value finite and within the normalised range.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include <stb_image.h>

#include "etproof/demo/image.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static etproof::fuzz::MemFile file("image");
  // A header declaring more than 2^18 pixels is decoded slowly under the sanitizers (up to
  // Pillow's limit of 179 million, which decode_image enforces): its decoding is skipped (its
  // header parsing, stb_image's info, still runs), so the fixed-count regression run stays short.
  // The decoders' arithmetic is the same on small pictures.
  int w = 0, h = 0, c = 0;
  if (size <= size_t(INT32_MAX) && stbi_info_from_memory(data, int(size), &w, &h, &c) &&
      std::abs(int64_t(w) * h) > (int64_t{1} << 18))  // a top-down BMP's height is negative
    return 0;
  etproof::Rgb8Image img;
  try {
    img = etproof::decode_image(file.write(data, size));
  } catch (const etproof::Error&) {
    return 0;
  }
  if (img.width <= 0 || img.height <= 0 ||
      img.pixels.size() != size_t(img.width) * size_t(img.height) * 3)
    std::abort();
  const int a = size >= 1 ? data[size - 1] : 0, b = size >= 2 ? data[size - 2] : 0;
  etproof::ImagePreprocessing pp;
  pp.input = "image";
  pp.color = "rgb";
  pp.interpolation = "bilinear";
  pp.resize_shorter = 1 + a % 48;
  // Resizing a very large picture, or one so narrow that its resized longer side is huge (a
  // 1245184 x 12 BMP at 48 pixels: 5 million columns), would only be slow: fuzz_image explores
  // the decoders and the resize's arithmetic, not its speed.
  const int64_t shorter = std::min(img.width, img.height), longer = std::max(img.width, img.height);
  if (int64_t(img.width) * img.height > (int64_t{1} << 18) ||
      longer * pp.resize_shorter / shorter > 1024)
    return 0;
  pp.crop_h = 1 + b % pp.resize_shorter;
  pp.crop_w = 1 + (b / 7) % pp.resize_shorter;
  pp.mean[0] = pp.mean[1] = pp.mean[2] = 127;
  pp.std[0] = pp.std[1] = pp.std[2] = 128;
  etproof::TensorSpec spec;
  spec.name = "image";
  spec.shape = {1, (a & 1) ? 3 : pp.crop_h, (a & 1) ? pp.crop_h : pp.crop_w, (a & 1) ? pp.crop_w : 3};
  spec.layout = (a & 1) ? "nchw" : "nhwc";
  etproof::HostTensor t;
  try {
    t = etproof::preprocess_rgb8(img.pixels.data(), img.width, img.height, pp, spec);
  } catch (const etproof::Error&) {
    return 0;  // e.g. a resized side shorter than the crop
  }
  if (t.numel() != size_t(pp.crop_h) * size_t(pp.crop_w) * 3 ||
      t.data.size() != t.numel() * sizeof(float))
    std::abort();
  const float* v = reinterpret_cast<const float*>(t.data.data());
  for (size_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(v[i]) || v[i] < -1.0f || v[i] > 1.0f) std::abort();  // (0..255 − 127) / 128
  return 0;
}
