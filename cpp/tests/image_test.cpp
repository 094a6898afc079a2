// The classification demo: decode + preprocess + rank, on constructed images and on the demo
// photos through the three exported EfficientNet-Lite0 bundles.
#include "etproof/image.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include "etproof/bundle.h"
#include "etproof/error.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::demo_bundles;
using etproof::testing::demo_photos;
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

// The demo: chelsea.png (a tabby cat) through every demo bundle. ImageNet 281–285 are the cats.
TEST(Classify, ChelseaIsACatOnEveryDemoBundle) {
  const fs::path photo = demo_photos() / "chelsea.png";
  ETPROOF_REQUIRE_BUNDLE(photo);
  for (const char* name : {"efficientnet_lite0-portable-fp32", "efficientnet_lite0-xnnpack-fp32",
                           "efficientnet_lite0-xnnpack-int8-dynamic-per-channel"}) {
    const fs::path dir = demo_bundles() / name;
    ETPROOF_REQUIRE_BUNDLE(dir);
    const Bundle b = open_bundle(dir);
    ASSERT_TRUE(b.manifest.preprocessing && b.manifest.labels) << name;
    const auto& pp = *b.manifest.preprocessing;
    ASSERT_EQ(b.manifest.inputs.size(), 1u);
    const HostTensor x = load_image(photo, pp, b.manifest.inputs[0]);
    LoadedModel model = LoadedModel::load(b);
    const auto out = model.run({{pp.input, x}});
    const auto top = top_k(out.at(b.manifest.labels->output), b.manifest.labels->names, 5);
    ASSERT_EQ(top.size(), 5u);
    EXPECT_GE(top[0].index, 281u) << name << ": " << top[0].label;
    EXPECT_LE(top[0].index, 285u) << name << ": " << top[0].label;
    EXPECT_GT(top[0].probability, top[1].probability);
  }
}

TEST(Classify, CppPreprocessingMatchesTheExportHalfsGoldenInput) {
  // The golden input for chelsea was preprocessed by the export half (PIL BILINEAR resize, crop,
  // normalize) from the same PNG. The C++ path resamples with the same triangle filter in double
  // precision where PIL uses 22-bit fixed point, so a pixel may land one 8-bit level apart; no
  // more, and only rarely.
  const fs::path photo = demo_photos() / "chelsea.png";
  const fs::path dir = demo_bundles() / "efficientnet_lite0-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(photo);
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  const GoldenCase* chelsea = nullptr;
  for (const auto& g : b.manifest.goldens)
    if (g.id == "chelsea") chelsea = &g;
  ASSERT_NE(chelsea, nullptr);
  const auto& pp = *b.manifest.preprocessing;
  const auto golden = read_golden_inputs(b, *chelsea).at(pp.input);
  const HostTensor mine = load_image(photo, pp, b.manifest.inputs[0]);
  ASSERT_EQ(mine.shape, golden.shape);
  const auto a = mine.to_double();
  const auto r = golden.to_double();
  const size_t plane = a.size() / 3;  // nchw: channel = i / plane
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double level = (pp.value_max - pp.value_min) / 255.0 / pp.std[i / plane];
    const double d = std::fabs(a[i] - r[i]);
    ASSERT_LE(d, level * 1.001) << "element " << i << ": more than one 8-bit level apart";
    if (d > level * 0.5) ++differing;
  }
  EXPECT_LT(differing, a.size() / 100) << differing << " of " << a.size() << " pixels differ";
}

}  // namespace
}  // namespace etproof
