// The classification demo (integration): decode + preprocess + rank on the demo photos through the
// three exported EfficientNet-Lite0 bundles. Constructed images are unit/image_test.cpp's.
#include "etproof/demo/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::demo_bundles;
using etproof::testing::demo_photos;

const float* floats(const HostTensor& t) { return reinterpret_cast<const float*>(t.data.data()); }

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

// The export half preprocessed each golden case's photo with PIL + numpy (Pillow 13: JPEG through
// libjpeg-turbo, Image.resize BILINEAR in 8-bit fixed point, float32 normalization); the C++ path
// reproduces it, so every golden input of the demo bundle comes out equal, within float32 rounding
// (in practice bit for bit). Each case id names a demo photo (chelsea.png, china.jpg, …).
TEST(Classify, CppPreprocessingMatchesTheExportHalfsGoldenInputsOnEveryPhoto) {
  const fs::path photos = demo_photos();
  const fs::path dir = demo_bundles() / "efficientnet_lite0-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(photos);
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  ASSERT_TRUE(b.manifest.preprocessing);
  const auto& pp = *b.manifest.preprocessing;
  ASSERT_FALSE(b.manifest.goldens.empty());
  size_t compared = 0;
  for (const auto& g : b.manifest.goldens) {
    fs::path photo;
    for (const auto& e : fs::directory_iterator(photos))
      if (e.path().stem() == g.id) photo = e.path();
    ASSERT_FALSE(photo.empty()) << "no demo photo named " << g.id << " in " << photos;
    const auto golden = read_golden_inputs(b, g).at(pp.input);
    const HostTensor mine = load_image(photo, pp, b.manifest.inputs[0]);
    ASSERT_EQ(mine.shape, golden.shape) << g.id;
    ASSERT_EQ(mine.dtype, DType::kFloat32) << g.id;
    ASSERT_EQ(golden.dtype, DType::kFloat32) << g.id;
    const float* a = floats(mine);
    const float* r = floats(golden);
    const size_t n = mine.data.size() / sizeof(float);
    double max_diff = 0;
    size_t not_identical = 0, beyond = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(a[i]) - r[i]);
      max_diff = std::max(max_diff, d);
      if (std::memcmp(&a[i], &r[i], sizeof(float)) != 0) ++not_identical;
      // float32 rounding: about one ulp (2^-23 relative); one 8-bit level is 1/std ≈ 0.008 here.
      if (d > 1e-6 * std::max(1.0, std::fabs(static_cast<double>(r[i])))) ++beyond;
    }
    std::cout << "[ image    ] " << photo.filename().string() << ": max |C++ - golden| = "
              << max_diff << ", " << not_identical << " of " << n << " elements not bit-identical\n";
    EXPECT_EQ(beyond, 0u) << g.id << ": " << beyond << " of " << n
                          << " elements beyond float32 rounding; max |difference| " << max_diff;
    ++compared;
  }
  EXPECT_EQ(compared, b.manifest.goldens.size());
}

}  // namespace
}  // namespace etproof
