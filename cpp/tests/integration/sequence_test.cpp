// Golden cases that are sequences of calls (docs/design.md §5, "State"): the real tinyllama
// bundles (build/test-bundles/state/tinyllama-{portable,xnnpack}-fp32, etproof.goldens.llama:
// ExecuTorch's example Llama with its KV cache, tokens int64 [1, S] and input_pos int64 [1] ->
// logits float32 [1, S, 256], the cache four mutable buffers) whose two cases are each a prompt and
// teacher-forced decode steps — prompt8 (8 tokens + 3 steps) and prompt5 (5 + 2). The replay
// runs each sequence's steps in order on one loaded program, judges and names each step
// (CASE/stepK), in process and in a worker; a perturbed step drifts alone and is named; a step
// that cannot run stops the steps after it, naming it; the manifest reader refuses a sequence
// with a gap.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/gtest.h"
#include "etproof/render/junit.h"
#include "etproof/replay/bench.h"
#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/render/matrix.h"
#include "etproof/render/parity.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "ledger_support.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

const std::vector<std::string> kBundles = {"tinyllama-portable-fp32", "tinyllama-xnnpack-fp32"};
// Their language-model recipes (the matrix test counts every tinyllama column).
const std::vector<std::string> kRecipeBundles = {"tinyllama-xnnpack-8da4w", "tinyllama-xnnpack-int8-weight-only"};
// The steps in replay order, as reports name them.
const std::vector<std::string> kSteps = {"prompt8/step0", "prompt8/step1", "prompt8/step2", "prompt8/step3",
                                         "prompt5/step0", "prompt5/step1", "prompt5/step2"};

fs::path llama(const std::string& name) { return test_bundles() / "state" / name; }

std::vector<std::string> case_ids(const ParityReport& r) {
  std::vector<std::string> ids;
  for (const CaseReport& c : r.cases) ids.push_back(c.case_id);
  return ids;
}

// The index in manifest.goldens of the case with id `id`.
size_t golden_index(const Manifest& m, const std::string& id) {
  for (size_t i = 0; i < m.goldens.size(); ++i)
    if (m.goldens[i].id == id) return i;
  ADD_FAILURE() << "no golden case " << id;
  return 0;
}

TEST(Sequence, TheManifestGivesEachStepAndTheReplayOrder) {
  ETPROOF_REQUIRE_BUNDLE(llama(kBundles[0]));
  const Bundle b = open_bundle(llama(kBundles[0]));
  EXPECT_EQ(b.manifest.mutable_buffers.size(), 4u);
  const auto runs = case_runs(b.manifest);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].size(), 4u);
  EXPECT_EQ(runs[1].size(), 3u);
  std::vector<std::string> labels;
  for (const auto& run : runs)
    for (const GoldenCase* g : run) {
      ASSERT_TRUE(g->sequence.has_value()) << g->id;
      EXPECT_EQ(g->id, g->sequence->case_id + ".step" + std::to_string(g->sequence->step));
      labels.push_back(case_label(b.manifest, *g));
    }
  EXPECT_EQ(labels, kSteps);
}

TEST(Sequence, EveryStepAgreesOnOneLoadInProcessAndInAWorker) {
  std::vector<std::string> all = kBundles;
  all.insert(all.end(), kRecipeBundles.begin(), kRecipeBundles.end());
  for (const std::string& name : all) {
    ETPROOF_REQUIRE_BUNDLE(llama(name));
    for (bool isolated : {false, true}) {
      ReplayOptions o;
      o.isolation.enabled = isolated;
      const ParityReport r = replay(llama(name), o);
      EXPECT_TRUE(r.passed) << name << (isolated ? " (worker)" : "") << ": " << to_text(r);
      EXPECT_EQ(case_ids(r), kSteps) << name;
      for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kAgreed) << name << " " << c.case_id << ": " << c.detail;
    }
  }
}

// The steps' state is what the goldens hold: a decode step run alone, on a program loaded afresh
// (an empty cache), answers otherwise.
TEST(Sequence, AStepRunAloneIsAnotherAnswer) {
  for (const std::string& name : kBundles) {
    ETPROOF_REQUIRE_BUNDLE(llama(name));
    const Bundle b = open_bundle(llama(name));
    const GoldenCase& g = b.manifest.goldens.at(golden_index(b.manifest, "prompt8.step2"));
    LoadedModel model = LoadedModel::load(b);
    const auto alone = model.run(read_golden_inputs(b, g)).at("logits").to_double();
    const auto golden = read_golden_outputs(b, g).at("logits").to_double();
    double worst = 0;
    for (size_t i = 0; i < golden.size(); ++i) worst = std::max(worst, std::abs(alone[i] - golden[i]));
    EXPECT_GT(worst, 0.1) << name;
  }
}

// A program whose logits moved by 1% at one step (its golden and references scaled, which the
// gate cannot tell from the program moving) drifts at that step alone, named CASE/stepK — on
// fp32 columns (against float64 truth) and on 8da4w and int8-weight-only (against their
// emulations, by the match criterion: 3.9e-3 of the range).
TEST(Sequence, APerturbedStepDriftsAndIsNamed) {
  std::vector<std::string> all = kBundles;  // the LLM recipes too: judged against their emulation
  all.insert(all.end(), kRecipeBundles.begin(), kRecipeBundles.end());
  for (const std::string& name : all) {
    ETPROOF_REQUIRE_BUNDLE(llama(name));
    const fs::path dir = scratch_dir() / name;
    fs::copy(llama(name), dir, fs::copy_options::recursive);
    const size_t i = golden_index(open_bundle(dir).manifest, "prompt8.step2");
    etproof::testing::scale_goldens(dir, 1.01, static_cast<int>(i));
    const ParityReport r = replay(dir, ReplayOptions{});
    EXPECT_FALSE(r.passed) << name;
    ASSERT_EQ(case_ids(r), kSteps) << name;
    for (const CaseReport& c : r.cases)
      EXPECT_EQ(c.status, c.case_id == "prompt8/step2" ? Status::kDrifted : Status::kAgreed)
          << name << " " << c.case_id << ": " << c.detail;
    EXPECT_NE(to_text(r).find("prompt8/step2"), std::string::npos);
  }
}

// A step whose input the program refuses (a prompt longer than the dynamic dimension's range)
// is refused by name; the steps after it in its sequence are not run and say which step stopped
// them; the other sequence runs.
TEST(Sequence, AStepThatCannotRunStopsTheStepsAfterItAndNamesIt) {
  const std::string name = kBundles[0];
  ETPROOF_REQUIRE_BUNDLE(llama(name));
  const fs::path dir = scratch_dir() / name;
  fs::copy(llama(name), dir, fs::copy_options::recursive);
  const Bundle src = open_bundle(dir);
  const GoldenCase& g = src.manifest.goldens.at(golden_index(src.manifest, "prompt8.step1"));
  const fs::path goldens = dir / (src.manifest.name + ".goldens");
  HostTensor tokens = read_npy(goldens / g.inputs.at("tokens"));
  tokens.shape = {1, 9};
  tokens.data.resize(9 * sizeof(int64_t), 0);
  write_npy(goldens / g.inputs.at("tokens"), tokens);
  etproof::testing::rehash_references(dir);
  const ParityReport r = replay(dir, ReplayOptions{});
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(case_ids(r), kSteps);
  EXPECT_EQ(r.cases[0].status, Status::kAgreed) << r.cases[0].detail;
  EXPECT_EQ(r.cases[1].status, Status::kBundleInvalid) << r.cases[1].detail;
  ASSERT_TRUE(r.cases[1].error.has_value());
  EXPECT_EQ(r.cases[1].error->kind(), ErrorKind::kShapeMismatch) << r.cases[1].detail;
  for (size_t k : {2u, 3u}) {
    EXPECT_EQ(r.cases[k].status, Status::kBundleInvalid) << r.cases[k].detail;
    EXPECT_NE(r.cases[k].detail.find("not run: the step before it, prompt8/step"), std::string::npos)
        << r.cases[k].detail;
  }
  EXPECT_NE(r.cases[2].detail.find("prompt8/step1, did not run"), std::string::npos) << r.cases[2].detail;
  for (size_t k : {4u, 5u, 6u}) EXPECT_EQ(r.cases[k].status, Status::kAgreed) << r.cases[k].detail;
}

TEST(Sequence, TheMatrixNamesEveryStepAndTheStateRule) {
  ETPROOF_REQUIRE_BUNDLE(llama(kBundles[0]));
  const Matrix m = build_matrix(test_bundles() / "state");
  for (const std::string& step : kSteps)
    EXPECT_NE(std::find(m.cases.begin(), m.cases.end(), step), m.cases.end()) << step;
  size_t llama_cells = 0;
  for (const Cell& c : m.cells) {
    if (m.columns.at(c.column).bundle.rfind("tinyllama-", 0) != 0) continue;
    ++llama_cells;
    EXPECT_EQ(c.status, CellStatus::kAgreed) << c.case_id << ": " << c.detail;
  }
  EXPECT_EQ(llama_cells, (kBundles.size() + kRecipeBundles.size()) * kSteps.size());
  EXPECT_NE(to_text(m).find("state: fresh per case (buffers: m.layers.0.attention.kv_cache.k_cache"), std::string::npos);
}

// Every report names a perturbed step: the parity JSON, JUnit, the ledger's record and
// EXPECT_BUNDLE_PARITY's failure (which passes on the bundle as exported).
TEST(Sequence, EveryReportNamesTheStep) {
  const std::string name = kBundles[1];
  ETPROOF_REQUIRE_BUNDLE(llama(name));
  EXPECT_BUNDLE_PARITY(llama(name).string());
  const fs::path dir = scratch_dir() / name;
  fs::copy(llama(name), dir, fs::copy_options::recursive);
  etproof::testing::scale_goldens(dir, 1.01, static_cast<int>(golden_index(open_bundle(dir).manifest, "prompt5.step1")));
  const ParityReport r = replay(dir, ReplayOptions{});
  const nlohmann::json j = to_json(r);
  bool named = false;
  for (const auto& c : j.at("cases"))
    if (c.at("case") == "prompt5/step1") named = c.at("status") == "drifted";
  EXPECT_TRUE(named) << j.dump(1);
  const auto records = records_from_parity(etproof::testing::ctx(), r);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].at("status"), "drifted");
  EXPECT_NE(records[0].dump().find("prompt5/step1/logits"), std::string::npos) << records[0].dump();
  const Matrix m = build_matrix(dir.parent_path());
  EXPECT_NE(to_junit(m).find("name=\"prompt5/step1\""), std::string::npos) << to_junit(m);
  EXPECT_NONFATAL_FAILURE(EXPECT_BUNDLE_PARITY(dir.string()), "prompt5/step1");
}

// bench times the sequence case as a language model's user does: prefill and decode tokens per
// second, from a fresh load, in process and through a worker (its report read back).
TEST(Sequence, BenchReportsPrefillAndDecodeTokensPerSecond) {
  ETPROOF_REQUIRE_BUNDLE(llama(kBundles[1]));
  BenchOptions o;
  o.runs = 3;
  o.warmup = 1;
  o.warm_loads = 1;
  for (bool isolated : {false, true}) {
    Isolation iso;
    iso.enabled = isolated;
    const BenchReport r = bench(llama(kBundles[1]), o, iso);
    ASSERT_TRUE(r.ok()) << to_text({r});
    ASSERT_TRUE(r.sequence.has_value()) << to_text({r});
    const SequenceBench& q = *r.sequence;
    EXPECT_EQ(q.case_id, "prompt8");
    EXPECT_EQ(q.steps, 4u);
    EXPECT_EQ(q.prefill_tokens, 8u);
    EXPECT_EQ(q.decode_tokens, 3u);
    EXPECT_EQ(q.runs, 3u);
    EXPECT_GT(q.prefill_ms, 0);
    EXPECT_NEAR(q.prefill_tokens_per_s, 1000.0 * 8 / q.prefill_ms, 1e-6 * q.prefill_tokens_per_s);
    EXPECT_NEAR(q.decode_tokens_per_s, 1000.0 / q.decode_ms_per_token, 1e-6 * q.decode_tokens_per_s);
    const std::string text = to_text({r});
    EXPECT_NE(text.find("sequence prompt8 (4 steps, from a fresh load): prefill 8 tokens in "), std::string::npos) << text;
    EXPECT_NE(text.find(" tokens/s; decode "), std::string::npos) << text;
    EXPECT_TRUE(to_json({r}).at("bench").at(0).at("sequence").at("decode_tokens_per_s").is_number());
  }
  // A bundle without a sequence case has none.
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  o.runs = 2;
  EXPECT_FALSE(bench(test_bundles() / "tiny-portable-fp32", o).sequence.has_value());
}

// The leading steps of `seq` whose argmax of the last row of `logits` in `a` equals that in `b`
// (a, b: per step, the logits tensor), as the test computes it from the bundle's files.
size_t leading_agreement(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  auto argmax = [](const HostTensor& t) {
    const auto v = t.to_double();
    const size_t row = static_cast<size_t>(t.shape.back());
    size_t best = v.size() - row;
    for (size_t i = best; i < v.size(); ++i)
      if (v[i] > v[best]) best = i;
    return best - (v.size() - row);
  };
  size_t n = 0;
  while (n < a.size() && argmax(a[n]) == argmax(b[n])) ++n;
  return n;
}

// greedy.output: per sequence case, the tokens a greedy decode takes as the float32 model does,
// for the program and (8da4w) the recipe's emulation, counted as the test counts them from the
// goldens and references; the budget's min_greedy_tokens drifts the first different step of a
// sequence under it, and is not judged on an fp32 column (it costs nothing).
TEST(Sequence, GreedyDecodeCountsTheTokensTakenAsTheFloat32ModelDoes) {
  const fs::path q = llama("tinyllama-xnnpack-8da4w");
  ETPROOF_REQUIRE_BUNDLE(q);
  const Bundle b = open_bundle(q);
  EXPECT_EQ(b.manifest.greedy_output, "logits");
  const ParityReport r = replay(q, ReplayOptions{});
  ASSERT_EQ(r.greedy.size(), 2u) << to_text(r);
  size_t least = SIZE_MAX;
  for (const GreedyAgreement& a : r.greedy) {
    std::vector<HostTensor> golden, emulation, program;
    for (const auto& run : case_runs(b.manifest))
      for (const GoldenCase* g : run)
        if (g->sequence && g->sequence->case_id == a.case_id) {
          golden.push_back(read_golden_outputs(b, *g).at("logits"));
          emulation.push_back(read_golden_reference(b, *g, "8da4w").at("logits"));
        }
    LoadedModel model = LoadedModel::load(b);  // the program's steps, on one load
    for (const auto& run : case_runs(b.manifest))
      for (const GoldenCase* g : run)
        if (g->sequence && g->sequence->case_id == a.case_id)
          program.push_back(model.run(read_golden_inputs(b, *g)).at("logits"));
    EXPECT_EQ(a.tokens, golden.size()) << a.case_id;
    EXPECT_EQ(a.program, leading_agreement(program, golden)) << a.case_id;
    ASSERT_TRUE(a.emulation.has_value()) << a.case_id;
    EXPECT_EQ(*a.emulation, leading_agreement(emulation, golden)) << a.case_id;
    EXPECT_EQ(a.reference, "8da4w");
    EXPECT_EQ(a.emulation_differs_at.empty(), *a.emulation == a.tokens) << a.case_id;
    least = std::min(least, *a.emulation);
  }
  EXPECT_NE(to_text(r).find("greedy decode of prompt8 (logits): the program takes "), std::string::npos) << to_text(r);
  EXPECT_TRUE(r.passed) << "no budget: reported, not judged\n" << to_text(r);
  // A budget one token over the sequence that agreed least: its first different step fails, as
  // over-budget (the program passed without the budget: it is faithful; the recipe cost too much).
  ReplayOptions o;
  o.budget = Budget{};
  o.budget->min_greedy_tokens = static_cast<int64_t>(least) + 1;
  const ParityReport judged = replay(q, o);
  for (const GreedyAgreement& a : judged.greedy)
    for (const CaseReport& c : judged.cases)
      if (c.case_id == a.emulation_differs_at && a.over_budget()) {
        EXPECT_EQ(c.status, Status::kOverBudget) << c.case_id;
        EXPECT_NE(c.detail.find("under the budget " + std::to_string(least + 1)), std::string::npos) << c.detail;
      }
  EXPECT_FALSE(judged.passed) << to_text(judged);
  // An fp32 column: the program's count, no emulation, the budget not judged.
  const ParityReport fp32 = replay(llama(kBundles[1]), o);
  ASSERT_EQ(fp32.greedy.size(), 2u);
  for (const GreedyAgreement& a : fp32.greedy) EXPECT_FALSE(a.emulation.has_value());
  EXPECT_NE(fp32.budget_note.find("min_greedy_tokens not judged"), std::string::npos) << fp32.budget_note;
  EXPECT_TRUE(fp32.passed) << to_text(fp32);
}

// The reader refuses a sequence whose steps are not 0..n-1, each once, naming the field.
TEST(Sequence, TheReaderRefusesASequenceWithAGapOrARepeatedStep) {
  ETPROOF_REQUIRE_BUNDLE(llama(kBundles[0]));
  const fs::path path = llama(kBundles[0]) / (kBundles[0] + ".etproof.json");
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  (void)parse_manifest(doc, path.string());
  nlohmann::json gap = doc;
  gap["goldens"][3]["sequence"]["step"] = 5;
  try {
    (void)parse_manifest(gap, "gap");
    ADD_FAILURE() << "a sequence with a gap was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(std::string(e.what()).find("goldens[3].sequence: sequence 'prompt8' has step 5 but not step 3"),
              std::string::npos) << e.what();
  }
  nlohmann::json twice = doc;
  twice["goldens"][2]["sequence"]["step"] = 1;
  try {
    (void)parse_manifest(twice, "twice");
    ADD_FAILURE() << "a repeated step was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("goldens[2].sequence.step: repeats step 1 of sequence 'prompt8' (also goldens[1].sequence)"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace etproof
