// The generated C++ API's parts that need no generated code (unit): etproof::Tensor's run-time
// checks (typed.h) and how `etproof gen` writes manifests with awkward names (codegen.h).
// ModelHandle's hash check on real bundles and writing only what changed are
// integration/typed_test.cpp's. The generated code itself is built and run against the installed
// package by tests/gen (CTest gen.*).
#include <gtest/gtest.h>

#include <fstream>

#include "etproof/codegen/codegen.h"
#include "etproof/codegen/typed.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using namespace etproof::testing;

TEST(TypedTensor, StaticTensorsAreZerosOfTheirShape) {
  Tensor<float, 2, 3> t;
  EXPECT_EQ(t.size(), 6u);
  EXPECT_EQ(t.shape(), (std::array<int64_t, 2>{2, 3}));
  for (float v : t.values()) EXPECT_EQ(v, 0.0f);
  t(1, 2) = 5;
  EXPECT_EQ(t.data()[5], 5.0f);  // C order
  EXPECT_EQ(t.host().dtype, DType::kFloat32);
  EXPECT_EQ(t.host().shape, (std::vector<int64_t>{2, 3}));
  static_assert(Tensor<float, 2, 3>::is_static && !Tensor<float, dyn, 3>::is_static);
  static_assert(Tensor<int64_t>::rank == 0 && Tensor<bool, 4>::dtype == DType::kBool);
}

TEST(TypedTensor, ShapesAreCheckedAgainstTheType) {
  const Tensor<float, dyn, 3> a({5, 3});
  EXPECT_EQ(a.size(), 15u);
  EXPECT_EQ(kind_of([] { Tensor<float, dyn, 3>({5, 4}); }), ErrorKind::kShapeMismatch);
  EXPECT_EQ(kind_of([] { Tensor<float, dyn, 3>({-1, 3}); }), ErrorKind::kShapeMismatch);
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const Tensor<float, 2, 3> b({2, 3}, v);
  EXPECT_EQ(b(1, 0), 4.0f);
  EXPECT_EQ(kind_of([&] { Tensor<float, 2, 3>({2, 3}, std::span(v).first(5)); }),
            ErrorKind::kShapeMismatch);
}

TEST(TypedTensor, ConversionsBetweenExtents) {
  const Tensor<float, 4, 3> s;
  const Tensor<float, dyn, 3> d = s;  // implicit: a static extent fits a dynamic one
  EXPECT_EQ(d.shape()[0], 4);
  const Tensor<float, 4, 3> back(d);  // explicit, checked: 4 fits
  EXPECT_EQ(back.size(), 12u);
  EXPECT_EQ(kind_of([&] { Tensor<float, 1, 3>{d}; }), ErrorKind::kShapeMismatch);  // 4 is not 1
}

TEST(TypedTensor, FromHostChecksDtypeShapeAndBytes) {
  const HostTensor f = f32({1, 2, 3}, {3});
  const auto t = Tensor<float, 3>::from_host(f);
  EXPECT_EQ(t(2), 3.0f);
  EXPECT_EQ(kind_of([&] { Tensor<double, 3>::from_host(f); }), ErrorKind::kDtypeMismatch);
  EXPECT_EQ(kind_of([&] { Tensor<float, 4>::from_host(f); }), ErrorKind::kShapeMismatch);
  EXPECT_EQ(kind_of([&] { Tensor<float, 3, 1>::from_host(f); }), ErrorKind::kShapeMismatch);
  HostTensor short_data = f;
  short_data.data.resize(8);
  EXPECT_EQ(kind_of([&] { Tensor<float, 3>::from_host(short_data); }), ErrorKind::kShapeMismatch);
  try {
    Tensor<int32_t, 3>::from_host(f, "output \"y\" of forward");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.cause()).find("output \"y\" of forward is float32"), std::string::npos)
        << e.cause();
  }
}

TEST(TypedTensor, HalfRoundTripsAndRoundsToNearestEven) {
  EXPECT_EQ(half_from_float(1.0f).bits, 0x3c00);
  EXPECT_EQ(half_to_float(half{0xc000}), -2.0f);
  EXPECT_EQ(half_to_float(half_from_float(65504.0f)), 65504.0f);  // binary16's largest finite
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even, 1.
  EXPECT_EQ(half_from_float(1.0f + 1.0f / 2048).bits, 0x3c00);
}

// A manifest with names C++ cannot take as they are.
Bundle awkward_bundle(const std::function<void(nlohmann::json&)>& edit = {}) {
  std::ifstream in(fixture("manifest_v1.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["model"] = "3d-net";
  doc["inputs"][0]["name"] = "input.image";
  doc["preprocessing"]["input"] = "input.image";
  for (auto& g : doc["goldens"]) {
    auto files = g["inputs"];
    g["inputs"] = {{"input.image", files.begin().value()}};
  }
  doc["outputs"][0]["name"] = "class";
  doc["labels"]["output"] = "class";
  for (auto& g : doc["goldens"]) {
    auto files = g["outputs"];
    g["outputs"] = {{"class", files.begin().value()}};
    g.erase("references");
  }
  doc.erase("references");
  doc["labels"]["names"][0] = "quote \" and \\ back?slash, caf\xc3\xa9\n";
  if (edit) edit(doc);
  Bundle b;
  b.manifest = parse_manifest(doc, "awkward");
  return b;
}

TEST(Codegen, NamesBecomeIdentifiersAndStringsStayExact) {
  const GeneratedCode g = generate_model_api(awkward_bundle(), {});
  EXPECT_EQ(g.class_name, "Model3dNet");
  EXPECT_EQ(g.header_name, "model3d_net.h");
  EXPECT_NE(g.header.find("etproof::Tensor<float, 1, 3, 224, 224> input_image;"), std::string::npos);
  EXPECT_NE(g.header.find("etproof::Tensor<float, 1, 1000> class_;"), std::string::npos);  // a keyword
  // The label exactly, as escapes no compiler reads differently (octal for every other byte).
  EXPECT_NE(g.header.find(R"("quote \" and \\ back\077slash, caf\303\251\012")"), std::string::npos);
  EXPECT_NE(g.source.find("run(\"forward\", {{\"input.image\", in.input_image.host()}})"), std::string::npos);
  EXPECT_NE(g.header.find("namespace etproof_models {"), std::string::npos);
}

TEST(Codegen, RefusesNamesItCannotWrite) {
  EXPECT_EQ(kind_of([] { generate_model_api(awkward_bundle(), {.class_name = "class"}); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([] { generate_model_api(awkward_bundle(), {.class_name = "9lives"}); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([] { generate_model_api(awkward_bundle(), {.namespace_name = "a::"}); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([] { generate_model_api(awkward_bundle(), {.namespace_name = "a:b"}); }),
            ErrorKind::kInvalidArgument);
  // "a.b" and "a_b" both become a_b.
  const Bundle twins = awkward_bundle([](nlohmann::json& doc) {
    nlohmann::json second = doc["outputs"][0];
    doc["outputs"][0]["name"] = "a.b";
    second["name"] = "a_b";
    doc["outputs"].push_back(second);
    doc.erase("labels");
    for (auto& g : doc["goldens"]) {
      auto file = g["outputs"].begin().value();
      g["outputs"] = {{"a.b", file}, {"a_b", file}};
      g.erase("files");
    }
  });
  try {
    generate_model_api(twins, {});
    FAIL() << "two outputs with one member name were written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.cause().find("\"a_b\""), std::string::npos) << e.cause();
  }
  const GeneratedCode global = generate_model_api(awkward_bundle(), {.class_name = "Net", .namespace_name = ""});
  EXPECT_EQ(global.header.find("namespace"), std::string::npos);
}

}  // namespace
}  // namespace etproof
