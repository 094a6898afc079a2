// The classification demo (unit): decode + preprocess + rank, on constructed images (PNGs and JPEGs
// this test writes). The demo photos through the three exported EfficientNet-Lite0 bundles are
// integration/image_test.cpp's.
#include "etproof/demo/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;

const float* floats(const HostTensor& t) { return reinterpret_cast<const float*>(t.data.data()); }

// A w×h RGB PNG whose pixel (x, y, c) is pixel(x, y, c).
fs::path write_png(const fs::path& path, int w, int h, int (*pixel)(int, int, int)) {
  std::vector<unsigned char> px(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) px[(static_cast<size_t>(y) * w + x) * 3 + c] =
          static_cast<unsigned char>(pixel(x, y, c));
  EXPECT_NE(stbi_write_png(path.c_str(), w, h, 3, px.data(), w * 3), 0);
  return path;
}

int gradient(int x, int y, int c) { return 10 * x + 40 * y + 3 * c; }

// A smooth picture with detail in every block (so its JPEG has kilobytes of scan data after the
// header, and decodes near what was written).
int texture(int x, int y, int c) {
  return static_cast<int>(std::lround(128 + 60 * std::sin(x / 3.0 + c) + 60 * std::cos(y / 4.0 - c)));
}

// A 96×64 RGB JPEG (stb's baseline encoder, quality 90) of `texture`, as libjpeg decodes any JPEG.
fs::path write_jpg(const fs::path& path) {
  constexpr int w = 96, h = 64;
  std::vector<unsigned char> px(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<unsigned char>(texture(x, y, c));
  EXPECT_NE(stbi_write_jpg(path.c_str(), w, h, 3, px.data(), 90), 0);
  return path;
}

ImagePreprocessing pp_for(int64_t shorter, int64_t crop) {
  ImagePreprocessing pp;
  pp.input = "image";
  pp.color = "rgb";
  pp.resize_shorter = shorter;
  pp.interpolation = "bilinear";
  pp.crop_h = pp.crop_w = crop;
  pp.mean[0] = 10, pp.mean[1] = 20, pp.mean[2] = 30;
  pp.std[0] = 2, pp.std[1] = 4, pp.std[2] = 8;
  return pp;
}

TensorSpec spec(std::vector<int64_t> shape, std::optional<std::string> layout) {
  TensorSpec s;
  s.name = "image";
  s.dtype = DType::kFloat32;
  s.shape = std::move(shape);
  s.layout = std::move(layout);
  return s;
}

TEST(Image, CenterCropNormalizeAndNchwLayoutAreExact) {
  // 6×4 image, shorter side already 4: no resampling; crop 4×4 starts at x = 1.
  const auto png = write_png(scratch_dir() / "g.png", 6, 4, gradient);
  const auto pp = pp_for(4, 4);
  const HostTensor t = load_image(png, pp, spec({1, 3, 4, 4}, "nchw"));
  ASSERT_EQ(t.shape, (std::vector<int64_t>{1, 3, 4, 4}));
  ASSERT_EQ(t.dtype, DType::kFloat32);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        const double want = (gradient(x + 1, y, c) - pp.mean[c]) / pp.std[c];
        EXPECT_NEAR(floats(t)[(c * 4 + y) * 4 + x], want, 1e-5) << c << "," << y << "," << x;
      }
}

TEST(Image, NhwcHoldsTheSameValuesChannelsLast) {
  const auto png = write_png(scratch_dir() / "g.png", 6, 4, gradient);
  const auto pp = pp_for(4, 4);
  const HostTensor a = load_image(png, pp, spec({1, 3, 4, 4}, "nchw"));
  const HostTensor b = load_image(png, pp, spec({1, 4, 4, 3}, "nhwc"));
  ASSERT_EQ(b.shape, (std::vector<int64_t>{1, 4, 4, 3}));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x)
        EXPECT_EQ(floats(a)[(c * 4 + y) * 4 + x], floats(b)[(y * 4 + x) * 3 + c]);
}

TEST(Image, ResizesTheShorterSideKeepingAspect) {
  // A tall 8×16 image, uniform per channel: after resizing to 4×8 and cropping 4×4 every pixel
  // still holds the uniform value; a wrong aspect or crop would not change that, so also check
  // that a mismatched crop is refused and a landscape image works the same way.
  const auto tall = write_png(scratch_dir() / "tall.png", 8, 16,
                              [](int, int, int c) { return 100 + 50 * c; });
  const auto pp = pp_for(4, 4);
  const HostTensor t = load_image(tall, pp, spec({1, 3, 4, 4}, "nchw"));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 16; ++i)
      EXPECT_NEAR(floats(t)[c * 16 + i], (100 + 50 * c - pp.mean[c]) / pp.std[c], 1e-5);
  // Left half dark, right half bright: the center crop of the resized image is split evenly.
  const auto wide = write_png(scratch_dir() / "wide.png", 32, 8,
                              [](int x, int, int) { return x < 16 ? 0 : 200; });
  const HostTensor w = load_image(wide, pp_for(4, 4), spec({1, 3, 4, 4}, "nchw"));
  const double dark = (0 - 10) / 2.0, bright = (200 - 10) / 2.0;
  EXPECT_NEAR(floats(w)[0], dark, 1e-5);       // [c0, y0, x0]
  EXPECT_NEAR(floats(w)[3], bright, 1e-5);     // [c0, y0, x3]
}

TEST(Image, ShapeTheSpecCannotHoldIsRefused) {
  const auto png = write_png(scratch_dir() / "g.png", 6, 4, gradient);
  try {
    load_image(png, pp_for(4, 4), spec({1, 3, 224, 224}, "nchw"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShapeMismatch);
  }
}

TEST(Image, UnreadableFilesAreIoErrorsWithTheReason) {
  const fs::path dir = scratch_dir();
  try {
    load_image(dir / "missing.png", pp_for(4, 4), spec({1, 3, 4, 4}, "nchw"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.cause().find("missing.png"), std::string::npos);
  }
  std::ofstream(dir / "text.png") << "this is not an image\n";
  try {
    load_image(dir / "text.png", pp_for(4, 4), spec({1, 3, 4, 4}, "nchw"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.cause().find("cannot decode"), std::string::npos) << e.cause();
  }
}

HostTensor logits(std::vector<float> v) {
  HostTensor t;
  t.dtype = DType::kFloat32;
  t.shape = {1, static_cast<int64_t>(v.size())};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

TEST(TopK, SoftmaxIsStableAndRanked) {
  // exp(1000) overflows a naive softmax.
  const auto r = top_k(logits({1000, 999, -1000, 998}), {"a", "b", "c", "d"}, 10);
  ASSERT_EQ(r.size(), 4u);  // k clamps to the number of classes
  EXPECT_EQ(r[0].index, 0u);
  EXPECT_EQ(r[0].label, "a");
  EXPECT_EQ(r[1].index, 1u);
  EXPECT_EQ(r[2].index, 3u);
  EXPECT_EQ(r[3].index, 2u);
  double sum = 0;
  for (const auto& x : r) {
    EXPECT_FALSE(std::isnan(x.probability));
    sum += x.probability;
  }
  EXPECT_NEAR(sum, 1, 1e-12);
  EXPECT_NEAR(r[0].probability / r[1].probability, std::exp(1.0), 1e-9);
  const auto one = top_k(logits({0, 0, 0, 0}), {"a", "b", "c", "d"}, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NEAR(one[0].probability, 0.25, 1e-12);
  EXPECT_THROW(top_k(HostTensor{DType::kFloat32, {2, 2}, std::vector<uint8_t>(16)}, {}, 1), Error);
}

// Known answers from Pillow 13.0.0 (Image.fromarray(...).resize(..., BILINEAR), then the crop) for
// a 4×12 picture, which Pillow 13 resamples vertically first, and a 9×7 one (horizontally first).
// With mean 0 and std 1 the output holds the 8-bit values themselves.
TEST(Image, ResamplesAsPillowInBothPassOrders) {
  const auto pixel = [](int x, int y, int c) { return (x * 37 + y * 91 + c * 53 + x * y * 11) % 256; };
  struct Case {
    int w, h;
    std::vector<int> want;  // [3, 3, 3], channels first
  };
  const std::vector<Case> cases = {
      {4, 12, {129, 98, 116, 108, 135, 162, 135, 172, 159, 182, 151, 104, 161, 124,
               87, 123, 97, 70, 137, 111, 150, 124, 177, 140, 176, 150, 123}},
      {9, 7, {106, 133, 130, 117, 131, 117, 118, 137, 121, 135, 135, 133, 144, 122,
              131, 153, 119, 135, 146, 144, 128, 119, 111, 123, 141, 136, 152}},
  };
  ImagePreprocessing pp = pp_for(3, 3);
  for (int k = 0; k < 3; ++k) pp.mean[k] = 0, pp.std[k] = 1;
  for (const Case& c : cases) {
    std::vector<uint8_t> rgb(static_cast<size_t>(c.w) * c.h * 3);
    for (int y = 0; y < c.h; ++y)
      for (int x = 0; x < c.w; ++x)
        for (int k = 0; k < 3; ++k)
          rgb[(static_cast<size_t>(y) * c.w + x) * 3 + k] = static_cast<uint8_t>(pixel(x, y, k));
    const HostTensor t = preprocess_rgb8(rgb.data(), c.w, c.h, pp, spec({3, 3, 3}, "nchw"));
    ASSERT_EQ(t.shape, (std::vector<int64_t>{3, 3, 3}));
    for (size_t i = 0; i < c.want.size(); ++i)
      EXPECT_EQ(floats(t)[i], static_cast<float>(c.want[i])) << c.w << "x" << c.h << " element " << i;
  }
}

TEST(Image, DecodeImageReturnsThePixelsAndPreprocessRgb8MatchesLoadImage) {
  const fs::path dir = scratch_dir();
  const auto png = write_png(dir / "d.png", 7, 5, gradient);
  const Rgb8Image im = decode_image(png);
  ASSERT_EQ(im.width, 7);
  ASSERT_EQ(im.height, 5);
  ASSERT_EQ(im.pixels.size(), 7u * 5u * 3u);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(im.pixels[(static_cast<size_t>(y) * 7 + x) * 3 + c], gradient(x, y, c));

  // load_image = decode_image + preprocess_rgb8, on a PNG and a JPEG, which is told by its bytes,
  // not its name: the same JPEG renamed .png decodes the same.
  const fs::path jpg = write_jpg(dir / "texture.jpg");
  const fs::path renamed = dir / "texture-really-a-jpeg.png";
  fs::copy_file(jpg, renamed, fs::copy_options::overwrite_existing);
  const Rgb8Image a = decode_image(jpg), b = decode_image(renamed);
  EXPECT_EQ(a.width, 96);
  EXPECT_EQ(a.height, 64);
  EXPECT_EQ(b.width, 96);
  EXPECT_EQ(b.height, 64);
  EXPECT_TRUE(a.pixels == b.pixels);
  // Lossy, but near what was written (quality 90): the mean error is a few levels.
  double err = 0;
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 96; ++x)
      for (int c = 0; c < 3; ++c)
        err += std::abs(int(a.pixels[(static_cast<size_t>(y) * 96 + x) * 3 + c]) - texture(x, y, c));
  EXPECT_LT(err / (96 * 64 * 3), 16) << "the decoded JPEG is not the picture written";
  std::vector<std::pair<fs::path, ImagePreprocessing>> pictures = {{png, pp_for(3, 3)}, {jpg, pp_for(56, 48)}};
  for (const auto& [path, pp] : pictures) {
    const TensorSpec s = spec({1, 3, pp.crop_h, pp.crop_w}, "nchw");
    const Rgb8Image rgb = decode_image(path);
    const HostTensor a = preprocess_rgb8(rgb.pixels.data(), rgb.width, rgb.height, pp, s);
    const HostTensor b = load_image(path, pp, s);
    EXPECT_EQ(a.shape, b.shape) << path;
    EXPECT_EQ(a.dtype, b.dtype) << path;
    EXPECT_TRUE(a.data == b.data) << path;
  }
}

// The crash fuzz_image filed as fuzz/crashes/image/NAME: decode_image refuses it with Error{kIo}
// whose cause contains `says`.
void expect_filed_crash_refused(const std::string& name, const std::string& says) {
  const fs::path file = fs::path(ETPROOF_SOURCE_DIR) / "fuzz" / "crashes" / "image" / name;
  try {
    const Rgb8Image img = decode_image(file);
    ADD_FAILURE() << name << " decoded to " << img.width << "x" << img.height;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo) << name;
    EXPECT_NE(e.cause().find(says), std::string::npos) << name << ": " << e.cause();
  }
}

// stb_image decodes this BMP header (786449 x 0) to an image without pixels.
TEST(Image, AnEmptyBmpIsAnIoError) {
  expect_filed_crash_refused("bmp-zero-height", "786449x0 pixels (an empty image)");
}

// A top-down BMP (negative height in its header) declaring 254 x 2097153 pixels, three times
// Pillow's limit, is refused before anything is decoded.
TEST(Image, ATopDownBmpDeclaringTooManyPixelsIsRefusedBeforeDecoding) {
  expect_filed_crash_refused("bmp-top-down-huge", "is 254x2097153 pixels, more than the 178956970");
}

// A JPEG libjpeg cannot decode is Error{kIo} with libjpeg's reason, never an abort or exit.
TEST(Image, CorruptJpegsAreIoErrors) {
  const fs::path dir = scratch_dir();
  std::vector<fs::path> bad;
  {  // a real JPEG cut in the middle of its scan data
    const fs::path whole = write_jpg(dir / "whole.jpg");
    const auto size = static_cast<std::streamsize>(fs::file_size(whole));
    std::ifstream in(whole, std::ios::binary);
    std::vector<char> head(static_cast<size_t>(size / 2));
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(head.size()));
    ASSERT_GT(size, 2000) << "the JPEG's header alone is ~600 bytes: half must cut the scan data";
    std::ofstream(dir / "truncated.jpg", std::ios::binary).write(head.data(), static_cast<std::streamsize>(head.size()));
    bad.push_back(dir / "truncated.jpg");
  }
  {  // a JPEG signature, then noise
    std::mt19937 rng(12345);
    std::string bytes = "\xFF\xD8\xFF";
    for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>(rng() & 0xFF));
    std::ofstream(dir / "noise.jpg", std::ios::binary) << bytes;
    bad.push_back(dir / "noise.jpg");
  }
  for (const auto& path : bad) {
    try {
      decode_image(path);
      ADD_FAILURE() << path << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo) << path;
      EXPECT_NE(e.cause().find("cannot decode"), std::string::npos) << e.cause();
      EXPECT_NE(e.cause().find(path.filename().string()), std::string::npos) << e.cause();
      EXPECT_FALSE(e.remedy().empty());
    }
    try {
      load_image(path, pp_for(4, 4), spec({1, 3, 4, 4}, "nchw"));
      ADD_FAILURE() << path << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo) << path;
    }
  }
  try {  // libjpeg's own words for running out of data, as Pillow refuses it too
    decode_image(bad[0]);
  } catch (const Error& e) {
    EXPECT_NE(e.cause().find("Premature end of JPEG file"), std::string::npos) << e.cause();
  }
}

TEST(Image, PreprocessRgb8RefusesBadArguments) {
  const std::vector<uint8_t> rgb(4 * 4 * 3, 100);
  const auto pp = pp_for(4, 4);
  const auto s = spec({1, 3, 4, 4}, "nchw");
  const auto kind_of = [&](const uint8_t* p, int w, int h, const ImagePreprocessing& q,
                           const TensorSpec& t) -> std::optional<ErrorKind> {
    try {
      preprocess_rgb8(p, w, h, q, t);
    } catch (const Error& e) {
      EXPECT_FALSE(e.cause().empty());
      EXPECT_FALSE(e.remedy().empty());
      return e.kind();
    }
    return std::nullopt;
  };
  EXPECT_EQ(kind_of(nullptr, 4, 4, pp, s), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of(rgb.data(), 0, 4, pp, s), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of(rgb.data(), 4, 0, pp, s), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of(rgb.data(), -4, 4, pp, s), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of(rgb.data(), 4, -1, pp, s), ErrorKind::kInvalidArgument);
  TensorSpec f64 = s;
  f64.dtype = DType::kFloat64;
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp, f64), ErrorKind::kDtypeUnsupported);
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp, spec({1, 3, 5, 5}, "nchw")), ErrorKind::kShapeMismatch);
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp, spec({3, 4, 4, 4, 1}, "nchw")), ErrorKind::kShapeMismatch);
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp_for(0, 4), s), ErrorKind::kManifestInvalid);
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp_for(3, 4), s), ErrorKind::kShapeMismatch);  // crop > resize
  EXPECT_EQ(kind_of(rgb.data(), 4, 4, pp, s), std::nullopt);
}

}  // namespace
}  // namespace etproof
