// Registry (unit): what this binary (linked with every delegate the wheel ships that links here) can
// run, read from ExecuTorch's own registry; the backend table as embedded; the runtime half's
// report. Its probes on the test bundles are integration/registry_test.cpp's.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <executorch/runtime/backend/interface.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/replay/backends_report.h"
#include "etproof/render/backends.h"
#include "etproof/runtime/registry.h"
#include "test_support.h"

namespace etproof {
namespace {

TEST(Registry, ListsXnnpackLinkedIntoThisBinary) {
  const auto all = registered_backends();
  EXPECT_EQ(all.size(), ::executorch::runtime::get_num_registered_backends());
  auto it = std::find_if(all.begin(), all.end(), [](const RuntimeBackend& b) { return b.id == "XnnpackBackend"; });
  ASSERT_NE(it, all.end()) << "XnnpackBackend is linked into etproof_tests but not registered";
  EXPECT_TRUE(it->registered);
  EXPECT_TRUE(it->available) << "XNNPACK runs on every CPU etproof's tests run on";
  for (const auto& b : all) EXPECT_TRUE(b.registered) << b.id;
}

TEST(Registry, FindsByIdAndRefusesUnknownIds) {
  const auto x = find_backend("XnnpackBackend");
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->id, "XnnpackBackend");
  EXPECT_TRUE(x->available);
  EXPECT_FALSE(find_backend("NoSuchBackend").has_value());
  EXPECT_FALSE(find_backend("").has_value());
}

TEST(Registry, MapsExportKeysToRuntimeIdsFromTheTable) {
  EXPECT_EQ(runtime_ids_for_backend("xnnpack"), std::vector<std::string>{"XnnpackBackend"});
  EXPECT_EQ(runtime_ids_for_backend("webgpu"), std::vector<std::string>{"VulkanBackend"});
  const auto portable = runtime_ids_for_backend("portable");
  ASSERT_TRUE(portable.has_value());
  EXPECT_TRUE(portable->empty());
  EXPECT_FALSE(runtime_ids_for_backend("no-such-backend").has_value());
}

// One home: the table embedded at configure time is data/backends.json as it is now, and it
// has the keys (and runtime ids) the Python loader reads from the same file.
TEST(BackendTable, EmbeddedTableIsDataBackendsJson) {
  const auto path = std::filesystem::path(ETPROOF_SOURCE_DIR) / "data" / "backends.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(ss.str() == std::string(embedded_backend_table_json()))
      << path << " differs from the table embedded in this binary: rebuild (the file is a "
      << "CMAKE_CONFIGURE_DEPENDS, so cmake --build re-embeds it)";
  const auto doc = nlohmann::json::parse(ss.str());
  std::vector<std::string> file_keys, embedded_keys;
  for (const auto& b : doc["backends"]) file_keys.push_back(b["key"].get<std::string>());
  for (const auto& e : backend_table().backends) embedded_keys.push_back(e.key);
  EXPECT_EQ(file_keys, embedded_keys);
  EXPECT_EQ(embedded_keys.size(), 19u) << "issue 3: nineteen backend keys";
  for (const auto& b : doc["backends"]) {
    const BackendEntry* e = find_backend_entry(b["key"].get<std::string>());
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->runtime_ids, b["runtime_ids"].get<std::vector<std::string>>()) << e->key;
  }
}

TEST(BackendTable, RefusesATableMissingAField) {
  auto doc = nlohmann::json::parse(embedded_backend_table_json());
  doc["backends"][1].erase("runtime_ids");
  try {
    parse_backend_table(doc, "test");
    ADD_FAILURE() << "a table without runtime_ids parsed";
  } catch (const Error& e) {
    EXPECT_NE(e.cause().find("runtime_ids"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("xnnpack"), std::string::npos) << e.cause();
  }
}

TEST(BackendTable, ReadsTheKernelLibrariesAndRefusesANamespaceTwice) {
  const auto& libs = backend_table().kernel_libraries;
  ASSERT_FALSE(libs.empty());
  EXPECT_EQ(libs.front().name_space, "aten");
  auto doc = nlohmann::json::parse(embedded_backend_table_json());
  doc["kernel_libraries"].push_back(doc["kernel_libraries"][0]);
  try {
    parse_backend_table(doc, "test");
    ADD_FAILURE() << "a table listing 'aten' twice parsed";
  } catch (const Error& e) {
    EXPECT_NE(e.cause().find("namespace 'aten' is listed twice"), std::string::npos) << e.cause();
  }
}

TEST(Components, XnnpackOfferedAndLinkedHere) {
  bool xnn = false, kernels = false;
  for (const auto& c : offered_components()) {
    if (c.name == "backend_xnnpack") xnn = c.linked;
    if (c.name == "kernels_optimized") kernels = c.linked;
  }
  EXPECT_TRUE(xnn) << "backend_xnnpack offered by the wheel and linked into etproof_tests";
  EXPECT_TRUE(kernels);
}

TEST(RuntimeHalf, EveryKeyOfTheTableHasOneLineAndEveryNegativeAReason) {
  const RuntimeHalf h = runtime_half({});
  ASSERT_EQ(h.keys.size(), backend_table().backends.size());
  for (size_t i = 0; i < h.keys.size(); ++i) {
    EXPECT_EQ(h.keys[i].key, backend_table().backends[i].key);
    EXPECT_FALSE(h.keys[i].reason.empty()) << h.keys[i].key;
  }
  auto key = [&](const std::string& k) {
    return *std::find_if(h.keys.begin(), h.keys.end(), [&](const auto& x) { return x.key == k; });
  };
  EXPECT_EQ(key("mps").status, RuntimeStatus::kRemovedUpstream);
  EXPECT_EQ(key("arm-tosa").status, RuntimeStatus::kNoRuntime);
  EXPECT_EQ(key("cadence").status, RuntimeStatus::kNoRuntime);
  EXPECT_EQ(key("vulkan").status, RuntimeStatus::kNotLinked);
  EXPECT_NE(key("vulkan").reason.find("EXECUTORCH_BUILD_VULKAN"), std::string::npos);
  EXPECT_NE(key("webgpu").reason.find("EXECUTORCH_BUILD_WEBGPU"), std::string::npos)
      << "webgpu shares VulkanBackend but its reason comes from its own entry";
  EXPECT_EQ(key("coreml").status, RuntimeStatus::kNotLinked);
  EXPECT_NE(key("coreml").reason.find("ships no backend_coreml"), std::string::npos)
      << key("coreml").reason;
}

// OpenVINO: linked when the wheel offers it; registered; its availability is whatever the machine
// says (OPENVINO_LIB_PATH / the openvino package), asked without crashing, with a reason. Where the
// wheel offers no backend_openvino (an aarch64 wheel), it is not linked, and says so.
TEST(RuntimeHalf, OpenvinoRegisteredWhenLinkedAndAnswersAvailability) {
  bool linked = false;
  for (const auto& c : offered_components())
    if (c.name == "backend_openvino") linked = c.linked;
  const RuntimeIdStatus s = classify_runtime_id("OpenvinoBackend");
  if (!linked) {
    EXPECT_FALSE(s.linked);
    EXPECT_FALSE(s.registered);
    EXPECT_EQ(s.status, RuntimeStatus::kNotLinked) << s.reason;
    EXPECT_FALSE(s.reason.empty());
    return;
  }
  EXPECT_TRUE(s.linked);
  EXPECT_TRUE(s.registered) << s.reason;
  EXPECT_TRUE(s.status == RuntimeStatus::kAvailable || s.status == RuntimeStatus::kUnavailable);
  EXPECT_FALSE(s.reason.empty());
  if (!s.available) EXPECT_NE(s.reason.find("is_available() is false"), std::string::npos) << s.reason;
  EXPECT_EQ(s.keys, std::vector<std::string>{"openvino"});
}

TEST(RuntimeHalf, JsonCarriesComponentsOfferedAndLinked) {
  const auto j = to_json(runtime_half({}));
  for (const char* k : {"runtime", "runtime_by_backend", "components"}) EXPECT_TRUE(j.contains(k)) << k;
  const auto offered = j["components"]["offered"].get<std::vector<std::string>>();
  const auto linked = j["components"]["linked"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(offered.begin(), offered.end(), "backend_xnnpack"), offered.end());
  EXPECT_NE(std::find(linked.begin(), linked.end(), "backend_xnnpack"), linked.end());
  for (const auto& l : linked) EXPECT_NE(std::find(offered.begin(), offered.end(), l), offered.end()) << l;
}

}  // namespace
}  // namespace etproof
