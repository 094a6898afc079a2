// Sequence cases whose steps run through several methods sharing the program's state
// (docs/design.md §5, "State"; manifest state.shared_across_methods): the real bundles
// build/test-bundles/state/tinyllama_pd-{portable-fp32,xnnpack-8da4w} (etproof.goldens.llama's
// prefill_decode_spec: ExecuTorch's example Llama as prefill(tokens int64 [1, 8], input_pos
// int64 [1]) and decode(token int64 [1, 1], input_pos) -> logits float32 [1, S, 256], one
// sequence `chat`: the prompt through prefill, 3 teacher-forced steps through decode, the KV cache
// four shared mutable buffers) and accumulator_chain-{portable,xnnpack}-fp32
// (etproof.fixtures.stateful.chain_spec: forward writes `total`, read reads it; its sequence
// `chain` is forward, read, forward, read). Each step agrees and is named, in process and in a worker; the
// same program loaded without shared arenas (the field dropped) drifts at the first step through
// another method; a perturbed step drifts alone; greedy and bench take the steps across methods.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/manifest.h"
#include "etproof/render/parity.h"
#include "etproof/replay/bench.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

const std::vector<std::string> kLlama = {"tinyllama_pd-portable-fp32", "tinyllama_pd-xnnpack-8da4w"};
const std::vector<std::string> kChain = {"accumulator_chain-portable-fp32", "accumulator_chain-xnnpack-fp32"};
const std::vector<std::string> kLlamaSteps = {"chat/step0", "chat/step1", "chat/step2", "chat/step3"};

fs::path state_bundle(const std::string& name) { return test_bundles() / "state" / name; }

// The sequence case of a bundle: tinyllama_pd's `chat`, accumulator_chain's `chain`.
std::string sequence_of(const std::string& bundle) { return bundle.rfind("tinyllama_pd", 0) == 0 ? "chat" : "chain"; }

std::vector<std::string> steps_of(const std::string& bundle) {
  std::vector<std::string> out;
  for (int k = 0; k < 4; ++k) out.push_back(sequence_of(bundle) + "/step" + std::to_string(k));
  return out;
}

std::vector<std::string> sequence_labels(const ParityReport& r, const std::string& bundle) {
  std::vector<std::string> ids;
  for (const CaseReport& c : r.cases)
    if (c.case_id.rfind(sequence_of(bundle) + "/", 0) == 0) ids.push_back(c.case_id);
  return ids;
}

const CaseReport& report_of(const ParityReport& r, const std::string& label) {
  for (const CaseReport& c : r.cases)
    if (c.case_id == label) return c;
  throw std::runtime_error("no case " + label + " in\n" + to_text(r));
}

// The index in manifest.goldens (every method's, in order) of the case with id `id`.
int golden_index(const Manifest& m, const std::string& id) {
  for (size_t i = 0; i < m.goldens.size(); ++i)
    if (m.goldens[i].id == id) return static_cast<int>(i);
  ADD_FAILURE() << "no golden case " << id;
  return -1;
}

TEST(CrossMethod, TheManifestSharesTheStateAndOrdersTheStepsAcrossMethods) {
  ETPROOF_REQUIRE_BUNDLE(state_bundle(kLlama[0]));
  const Bundle b = open_bundle(state_bundle(kLlama[0]));
  EXPECT_TRUE(b.manifest.state_shared_across_methods);
  EXPECT_EQ(b.manifest.mutable_buffers.size(), 4u);
  const auto runs = case_runs(b.manifest);
  ASSERT_EQ(runs.size(), 1u);
  std::vector<std::string> methods, labels;
  for (const GoldenCase* g : runs[0]) {
    methods.push_back(g->method);
    labels.push_back(case_label(b.manifest, *g));
  }
  EXPECT_EQ(methods, (std::vector<std::string>{"prefill", "decode", "decode", "decode"}));
  EXPECT_EQ(labels, kLlamaSteps);
  // The reports say the rule: parity's text and JSON.
  const ParityReport r = replay(state_bundle(kLlama[0]), ReplayOptions{});
  EXPECT_NE(to_text(r).find("state: fresh per case, shared by the methods (buffers: "
                            "m.layers.0.attention.kv_cache.k_cache"),
            std::string::npos)
      << to_text(r);
  EXPECT_EQ(to_json(r).at("state").value("shared_across_methods", false), true);
}

TEST(CrossMethod, EveryStepAgreesThroughBothMethodsInProcessAndInAWorker) {
  std::vector<std::string> all = kLlama;
  all.insert(all.end(), kChain.begin(), kChain.end());
  for (const std::string& name : all) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    for (bool isolated : {false, true}) {
      ReplayOptions o;
      o.isolation.enabled = isolated;
      const ParityReport r = replay(state_bundle(name), o);
      EXPECT_TRUE(r.passed) << name << (isolated ? " (worker)" : "") << ": " << to_text(r);
      EXPECT_EQ(sequence_labels(r, name), steps_of(name)) << name;
      for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kAgreed) << name << " " << c.case_id << ": " << c.detail;
    }
  }
}

// The same program loaded with an arena per method (state.shared_across_methods dropped from its
// manifest): the step through the second method reads that method's own, initial, state — the
// step before it agrees, it drifts, and the report names it. What the field is there for.
TEST(CrossMethod, WithoutSharedArenasTheFirstStepThroughTheOtherMethodDrifts) {
  for (const std::string& name : {kLlama[0], kChain[0]}) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const fs::path dir = scratch_dir() / name;
    fs::copy(state_bundle(name), dir, fs::copy_options::recursive);
    const fs::path path = dir / (name + ".etproof.json");
    nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
    ASSERT_TRUE(doc["state"].value("shared_across_methods", false)) << name;
    doc["state"].erase("shared_across_methods");
    std::ofstream(path) << doc.dump(2) << "\n";
    const ParityReport r = replay(dir, ReplayOptions{});
    const std::vector<std::string> steps = steps_of(name);
    EXPECT_FALSE(r.passed) << name;
    EXPECT_EQ(report_of(r, steps[0]).status, Status::kAgreed) << name;
    EXPECT_EQ(report_of(r, steps[1]).status, Status::kDrifted) << name << ": " << report_of(r, steps[1]).detail;
    EXPECT_NE(to_text(r).find(steps[1]), std::string::npos);
  }
}

// A 1% move of one decode step's logits (its golden and references scaled) drifts that step
// alone: against float64 truth (fp32) and against the 8da4w emulation (the match criterion).
TEST(CrossMethod, APerturbedStepDriftsAloneAndIsNamed) {
  for (const std::string& name : kLlama) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const fs::path dir = scratch_dir() / ("perturbed-" + name);
    fs::create_directories(dir);
    fs::copy(state_bundle(name), dir / name, fs::copy_options::recursive);
    etproof::testing::scale_goldens(dir / name, 1.01, golden_index(open_bundle(dir / name).manifest, "chat.step2"));
    const ParityReport r = replay(dir / name, ReplayOptions{});
    EXPECT_FALSE(r.passed) << name;
    for (const std::string& step : kLlamaSteps)
      EXPECT_EQ(report_of(r, step).status, step == "chat/step2" ? Status::kDrifted : Status::kAgreed)
          << name << " " << step << ": " << report_of(r, step).detail;
  }
}

// greedy counts the tokens of the sequence across both methods; bench times its prefill and
// decode from a fresh load.
TEST(CrossMethod, GreedyAndBenchFollowTheStepsAcrossMethods) {
  const fs::path q = state_bundle(kLlama[1]);
  ETPROOF_REQUIRE_BUNDLE(q);
  const ParityReport r = replay(q, ReplayOptions{});
  ASSERT_EQ(r.greedy.size(), 1u) << to_text(r);
  EXPECT_EQ(r.greedy[0].case_id, "chat");
  EXPECT_EQ(r.greedy[0].tokens, 4u);
  ASSERT_TRUE(r.greedy[0].emulation.has_value());
  EXPECT_EQ(r.greedy[0].program, *r.greedy[0].emulation) << to_text(r);
  BenchOptions o;
  o.runs = 2;
  o.warmup = 1;
  o.warm_loads = 1;
  const BenchReport b = bench(q, o, Isolation{});
  ASSERT_TRUE(b.ok()) << to_text({b});
  ASSERT_TRUE(b.sequence.has_value()) << to_text({b});
  EXPECT_EQ(b.sequence->case_id, "chat");
  EXPECT_EQ(b.sequence->prefill_tokens, 8u);
  EXPECT_EQ(b.sequence->decode_tokens, 3u);
  EXPECT_GE(b.sequence->prefill_p90_ms, b.sequence->prefill_ms);  // a percentile above the median
  EXPECT_GE(b.sequence->decode_p90_ms_per_token, b.sequence->decode_ms_per_token);
  EXPECT_NE(to_text({b}).find("per token (p90 "), std::string::npos) << to_text({b});
  EXPECT_EQ(b.methods.size(), 2u);
}

}  // namespace
}  // namespace etproof
