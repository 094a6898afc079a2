// The code `etproof gen` writes (through etproof_add_model), run on real bundles: typed runs equal
// the runtime binding's, the hash check, dynamic shapes, several methods, labels, and the
// generated preprocessing against the export half's golden inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include <etproof/runtime/bundle.h>
#include <etproof/demo/image.h>

#include "effnet.h"
#include "encdec.h"
#include "tiny.h"

namespace fs = std::filesystem;
using etproof::ErrorKind;

namespace {

template <class F>
ErrorKind kind_of(F&& f) {
  try {
    f();
  } catch (const etproof::Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no etproof::Error thrown";
  return ErrorKind::kCrashed;
}

bool same_bytes(const etproof::HostTensor& a, const etproof::HostTensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data == b.data;
}

TEST(Generated, RunEqualsTheRuntimeBindingOnEveryGolden) {
  Tiny tiny = Tiny::open(TINY_DIR);
  const etproof::Bundle b = etproof::open_bundle(TINY_DIR);
  etproof::LoadedModel direct = etproof::LoadedModel::load(b);
  ASSERT_FALSE(b.manifest.goldens.empty());
  for (const etproof::GoldenCase& c : b.manifest.goldens) {
    const auto in = etproof::read_golden_inputs(b, c);
    const auto x = etproof::Tensor<float, 1, 3, 16, 16>::from_host(in.at("x"));
    const Tiny::Outputs out = tiny.run(x);
    EXPECT_TRUE(same_bytes(out.y.host(), direct.run(in).at("y"))) << c.id;
    EXPECT_TRUE(same_bytes(tiny.forward(Tiny::Inputs{x}).y.host(), out.y.host())) << c.id;
  }
}

TEST(Generated, ConstantsAreTheManifestsAndTheLoadedProgramsDelegates) {
  Tiny tiny = Tiny::open(TINY_DIR);
  const etproof::Manifest& m = tiny.bundle().manifest;
  EXPECT_EQ(Tiny::kBundleName, m.name);
  EXPECT_EQ(Tiny::kProgramSha256, m.artifact.sha256);
  EXPECT_EQ(Tiny::kBackend, "xnnpack");
  EXPECT_EQ(Tiny::kRecipe, m.recipe);
  ASSERT_EQ(Tiny::kDelegates.size(), 1u);
  EXPECT_EQ(Tiny::kDelegates[0], "XnnpackBackend");
  EXPECT_EQ(tiny.delegates(), std::vector<std::string>{"XnnpackBackend"});
}

TEST(Generated, OpensTheCopyBesideTheExecutable) {
  Tiny tiny = Tiny::open();  // etproof_add_model copied it into etproof-bundles/
  EXPECT_NE(tiny.bundle().dir.string().find("etproof-bundles"), std::string::npos);
  const Tiny::Outputs out = tiny.run(etproof::Tensor<float, 1, 3, 16, 16>{});
  for (float v : out.y.values()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Generated, RefusesABundleWhoseProgramIsNotTheOneItWasGeneratedFrom) {
  try {
    Tiny::open(TINY_PORTABLE_DIR);
    FAIL() << "opened tiny-portable-fp32 with code generated from tiny-xnnpack-fp32";
  } catch (const etproof::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kArtifactMismatch);
    EXPECT_NE(e.cause().find(std::string(Tiny::kProgramSha256)), std::string::npos) << e.cause();
  }
}

TEST(Generated, SeveralMethodsAndADynamicBatch) {
  etproof_models::Encdec m = etproof_models::Encdec::open(ENCDEC_DIR);
  const etproof::Bundle b = etproof::open_bundle(ENCDEC_DIR);
  etproof::LoadedModel direct = etproof::LoadedModel::load(b);
  for (int64_t batch : {1, 2, 4}) {
    etproof::Tensor<float, etproof::dyn, 6> x({batch, 6});
    for (size_t i = 0; i < x.size(); ++i) x.data()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    const auto code = m.encode(x).code;
    EXPECT_EQ(code.shape()[0], batch);
    EXPECT_TRUE(same_bytes(code.host(), direct.run("encode", {{"x", x.host()}}).at("code")));
  }
  // Outside the exported range (batch 1..4): refused by name before running.
  EXPECT_EQ(kind_of([&] { m.encode(etproof::Tensor<float, etproof::dyn, 6>({9, 6})); }),
            ErrorKind::kShapeMismatch);
  // decode takes [1, 3]: encode's dynamic batch converts explicitly, checked.
  const auto one = m.encode(etproof::Tensor<float, 1, 6>{}).code;
  const auto y = m.decode(etproof::Tensor<float, 1, 3>(one), etproof::Tensor<int64_t, 1>{}).y;
  EXPECT_EQ(y.shape(), (std::array<int64_t, 2>{1, 6}));
  const auto two = m.encode(etproof::Tensor<float, 2, 6>{}).code;
  EXPECT_EQ(kind_of([&] { etproof::Tensor<float, 1, 3>{two}; }), ErrorKind::kShapeMismatch);
}

// The photo a golden case of the demo bundle was made from: PHOTOS_DIR/ID.{png,jpg}.
fs::path photo_of(const std::string& id) {
  for (const char* ext : {".png", ".jpg"})
    if (fs::exists(fs::path(PHOTOS_DIR) / (id + ext))) return fs::path(PHOTOS_DIR) / (id + ext);
  return {};
}

TEST(Generated, PreprocessReproducesTheExportHalfsGoldenInputs) {
  // The export half made each golden input from a photo (PIL decode and BILINEAR resize, crop,
  // numpy float32 normalisation); the generated preprocess must give the same float32 values.
  const etproof::Bundle b = etproof::open_bundle(demo::Effnet::open().bundle().dir);
  ASSERT_EQ(b.manifest.goldens.size(), 6u);
  for (const etproof::GoldenCase& c : b.manifest.goldens) {
    const fs::path photo = photo_of(c.id);
    ASSERT_FALSE(photo.empty()) << "no photo for golden case " << c.id << " in " << PHOTOS_DIR;
    const auto mine = demo::Effnet::preprocess(photo);
    const etproof::HostTensor golden = etproof::read_golden_inputs(b, c).at("image");
    ASSERT_EQ(mine.host().shape, golden.shape) << c.id;
    const float* g = reinterpret_cast<const float*>(golden.data.data());
    double worst_ulps = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      const double ulp = std::nextafter(std::fabs(g[i]), INFINITY) - std::fabs(g[i]);
      worst_ulps = std::max(worst_ulps, std::fabs(double(mine.data()[i]) - g[i]) / ulp);
    }
    EXPECT_LE(worst_ulps, 1.0) << c.id << ": " << worst_ulps << " float32 steps from the golden input";
    // From pixels already in memory: the same.
    const etproof::Rgb8Image rgb = etproof::decode_image(photo);
    const auto from_buffer = demo::Effnet::preprocess(rgb.pixels.data(), rgb.width, rgb.height);
    EXPECT_TRUE(same_bytes(from_buffer.host(), mine.host())) << c.id;
  }
}

TEST(Generated, LabelsAreTheManifestsAndChelseaIsACat) {
  demo::Effnet model = demo::Effnet::open();
  const auto& names = model.bundle().manifest.labels->names;
  ASSERT_EQ(demo::Effnet::kLabels.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(demo::Effnet::kLabels[i], names[i]);
  const auto top = demo::Effnet::top_k(model.run(demo::Effnet::preprocess(photo_of("chelsea"))).logits, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_GE(top[0].index, 281u);  // ImageNet 281–285 are the cats
  EXPECT_LE(top[0].index, 285u);
}

}  // namespace
