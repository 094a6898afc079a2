// etproof/replay/replay.h — the one replay engine (docs/design.md §5, §6): open a bundle, check that this
// binary can run its delegates, load it, run every golden case through it and gate each output
// against its bound. `parity`, `matrix`, `measure-tolerances`, the `backends` probes and
// EXPECT_PARITY all call replay(); `classify` uses its first step, prepare().
//
// The outcome is typed and never an exception for anything a bundle can do wrong: a bundle that
// cannot be run at all has `refused` set (one status from etproof/status.h, with the Error behind
// it); a case that cannot be measured has its own status and Error; a case that ran has every
// output's TensorReport (gate.h) and a status — agreed, agreed-undelegated, drifted, no-bound,
// or, where an expected-failure record covers it (etproof/xfail.h), xfail / xpass.
// run_parity() is the throwing form: the first Error of the outcome is rethrown.
//
// Order of the checks (each a status, and cheap before expensive):
//   1. manifest read and validated                       → bundle-invalid
//   2. the delegates the manifest records, against this binary's registry
//                                                        → not-linked / unavailable (the .pte is
//                                                          not read: nothing is hashed for a
//                                                          bundle this binary cannot run)
//   3. the artifact's size and SHA-256 against the manifest → bundle-invalid
//   4. ExecuTorch loads the program; the delegates in the program itself are checked again
//                                                        → load-failed / not-linked / unavailable
//   5. the bound for the recipe and precision (gate.h)   → none known: cases run, no-bound
//   6. per case: goldens read (bundle-invalid), run through the case's method (run-failed),
//      each output gated.
// Between 1 and 2, a method the caller asked for (ReplayOptions::methods) that the manifest does
// not list refuses the bundle: bundle-invalid, with an Error{kInvalidArgument} naming it.
//
// Methods: every golden case runs through its own method (GoldenCase::method; a schema-1
// bundle's are forward's). Cases are named case_label() (manifest.h): METHOD/CASE when the
// program has several methods ("encode/one"), the plain id otherwise; that name is what reports,
// the matrix, the ledger, JUnit and xfail records' `cases` see.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"
#include "etproof/core/status.h"
#include "etproof/core/xfail.h"

namespace etproof {

// Runs that must repeat (`--repeat N`, `--fresh-loads K`): each case that ran runs `repeat` times in
// all on the loaded program and once more on each of `fresh_loads` programs loaded afresh (a
// program that writes state: every run on a fresh load, its state initial). The first run is the
// one judged; every later run's outputs are compared with it byte for byte, and a case whose
// outputs differ (or whose later run fails) is nondeterministic (CaseReport::repeats). repeat 1
// and fresh_loads 0: each case once (`parity`'s default; `matrix` runs each twice).
struct Repetition {
  size_t repeat = 1;
  size_t fresh_loads = 0;
  [[nodiscard]] bool any() const { return repeat > 1 || fresh_loads > 0; }
};

struct ReplayOptions {
  // The bound. Neither set: derived from the manifest's recipe and precision (derive_bound).
  // `bound`: used as given, and reported as caller-supplied (a rule passed here is still resolved
  // per output). `caller`: the derived bound with these fields replaced (override_bound).
  std::optional<Bound> bound;
  BoundOverride caller;
  // Expected failures (DIR/xfail.json records) applied to the cases they cover: a drifted case
  // becomes xfail, an agreed one xpass. `xfail_file` names the file in the details.
  std::vector<XfailRecord> xfail;
  std::string xfail_file;
  // false (measure-tolerances): measure each column against its own reference computation (the
  // float32 golden, or the recipe's or precision's emulation) rather than judging float columns
  // against float64 truth (references.h, plan_judgement).
  bool use_truth = true;
  // The caller's accuracy budget for the recipe's cost (`--budget`): each key set replaces the
  // manifest's (effective_budget, references.h); nullopt: the manifest's budget alone.
  std::optional<Budget> budget;
  // The methods whose golden cases are replayed, by name (`--method`); empty: every method the
  // manifest lists. A name the manifest does not list refuses the bundle (see above).
  std::vector<std::string> methods;
  // Replay cases whose golden files no longer match the manifest's sizes and SHA-256
  // (goldens[i].files; `parity --allow-edited-goldens`): their numbers are measured and shown, and
  // the case is drifted whatever they are ("golden edited since export"). false: such a case is
  // bundle-invalid (Error{kArtifactMismatch} naming the file).
  bool allow_edited_goldens = false;
  // Run the program in a worker process (etproof/isolation.h): a crash or a limit inside
  // ExecuTorch becomes a `crashed` bundle or case (Error{kCrashed}) instead of ending the caller.
  // Default: in this process.
  Isolation isolation;
  // Runs that must repeat (Repetition): the default runs each case once.
  Repetition repetition;
};

// What the runs after the judged one saw (Repetition), for a case that ran.
struct RepeatReport {
  size_t runs = 1;         // runs in all, the judged one included
  size_t fresh_loads = 0;  // of them, on a program loaded afresh
  size_t distinct = 1;     // distinct outputs seen, every output of the case together, byte for byte
  std::string output;      // the first output that differed from the judged run's ("": none)
  // The largest |a - b| over every element of every output between the judged run and any other
  // (the output's own unit); infinity where a value was NaN on one side only or a shape differed.
  double max_abs_difference = 0;
  std::string failed;      // a later run that failed where the judged one ran: which, and its error
  Status first = Status::kAgreed;  // the judged run's own status, before nondeterministic replaced it
  [[nodiscard]] bool identical() const { return distinct == 1 && failed.empty(); }
};
// "3 runs (1 on a fresh load): 2 distinct outputs, largest difference 4.77e-07 (y)", or
// "3 runs (1 on a fresh load): bit-identical"; a failed later run is named after.
[[nodiscard]] std::string repeat_text(const RepeatReport& p);
// {"runs", "fresh_loads", "distinct", "identical", "max_abs_difference" (null when infinite),
// "output" and "failed" where set}.
[[nodiscard]] nlohmann::json to_json(const RepeatReport& p);

struct CaseReport {
  std::string case_id;               // case_label(): "encode/one" with several methods, else "one"
  std::string method;                // the method it ran through ("forward" for schema 1)
  std::string data;                  // "real" | "synthetic"
  Status status = Status::kAgreed;   // see the header comment
  bool passed = false;               // every output within the bound (before any xfail record;
                                     // false when nothing was measured)
  std::vector<TensorReport> outputs; // every output gated; empty when the case could not run
  std::string detail;                // the failing rules, the error, or the xfail record's reason
  std::optional<Error> error;        // why the case could not be measured
  std::optional<XfailRecord> xfail;  // the record that covers it, where one does
  // What the recipe cost (question 2, references.h): per output, the emulation against the float32
  // golden, where the bundle carries one; judged only against the manifest's budget.
  std::vector<RecipeCost> costs;
  // A sequence case's step, where the manifest names greedy.output: the next token (argmax over
  // the last axis of the output's last row: the last position of the last batch element; the
  // first index on a tie) the program, the float32 golden and the recipe's
  // emulation (where the bundle carries one) choose.
  struct GreedyToken {
    std::string sequence;  // the sequence case (GoldenCase::sequence)
    int64_t program = 0, golden = 0;
    std::optional<int64_t> emulation;
  };
  std::optional<GreedyToken> greedy;
  // The runs beyond the judged one, where ReplayOptions asked for any and the case ran.
  std::optional<RepeatReport> repeats;
  // Its golden files no longer match the manifest's hashes (allow_edited_goldens): measured against
  // the edited golden, and drifted whatever the numbers.
  bool golden_edited = false;
};

// Per sequence case, where the manifest names greedy.output (Manifest::greedy_output): the tokens
// a greedy decode takes as the float32 model does before the first difference — teacher-forced
// steps are fed the float32 model's tokens, so until the first difference a free-running decode
// is fed the same ones. For the program, and (the recipe's cost, question 2) for its emulation,
// which the budget's min_greedy_tokens judges: under it, the step with the emulation's first
// different token drifts, naming the budget.
struct GreedyAgreement {
  std::string case_id;    // the sequence case
  std::string output;     // greedy.output
  size_t tokens = 0;      // its steps that ran (one token each)
  size_t program = 0;     // leading tokens the program takes as the float32 model does
  std::string program_differs_at;  // CASE/stepK of the first difference; empty: none
  std::string reference;  // the recipe's emulation compared, where the bundle carries one
  std::optional<size_t> emulation;  // leading tokens the emulation takes as the float32 model does
  std::string emulation_differs_at;
  std::optional<int64_t> budget;    // the budget's min_greedy_tokens, where set
  // Under the budget where the emulation's decode differed before taking that many tokens (one
  // that agreed on every token of a shorter sequence is not under it).
  bool over_budget() const {
    return budget && emulation && *emulation < tokens && static_cast<int64_t>(*emulation) < *budget;
  }
};

// Question 2 over the whole bundle, for a classifier output (the manifest's labels name it, schema
// 1 only: a schema-2 manifest has no labels): how
// many rows (samples) of all golden cases keep the golden's top-1 class under the recipe's
// emulation. Judged against the budget's top1_agreement where one is set: under it, every case
// with a changed row is drifted (it spent the budget), its detail saying so.
struct Top1Agreement {
  std::string output;
  std::string reference;  // the emulation compared with the golden
  size_t agreed = 0;
  size_t rows = 0;
  std::optional<double> budget;  // the budget's top1_agreement, where set
  double fraction() const { return rows ? static_cast<double>(agreed) / rows : 1.0; }
  bool over_budget() const { return budget && rows && fraction() < *budget; }
};

struct ParityReport {
  // The bundle: from its manifest where that could be read (else the path's last component).
  std::string path;                    // the bundle path as given
  std::string bundle;                  // manifest name
  std::string model;
  std::string backend;
  std::string recipe;
  std::string precision;
  std::optional<std::string> compute_unit;
  std::string bundle_sha256;           // the artifact's SHA-256 as the manifest records it
  std::string bundle_created_utc;
  std::map<std::string, std::string> bundle_toolchain;  // the export half's versions
  std::vector<std::string> delegates;  // read from the program at load (the manifest's before)
  bool manifest_read = false;          // whether the fields above come from a manifest
  // The methods replayed, in manifest order (the caller's selection, else every method), and
  // whether the program has several (has_several_methods): reports then name the methods.
  std::vector<std::string> methods;
  bool several_methods = false;
  // The buffers the program writes (Manifest::mutable_buffers); non-empty: every case ran on a
  // freshly loaded program, from its initial state ("state: fresh per case (buffers: …)").
  std::vector<std::string> mutable_buffers;
  // Manifest::state_shared_across_methods: the methods share those buffers, and a sequence's
  // steps may run through several ("state: fresh per case, shared by the methods (…)").
  bool state_shared_across_methods = false;

  // The bound the cases were judged by: derived (a rule, resolved per output) or the caller's.
  // When none is known (no_bound non-empty) the cases still run, measured against a bound no
  // output can exceed, and have status no-bound.
  Bound bound;
  // The golden row an output falls back to where its plan widens by a rounded emulation and that
  // leaves no bound stricter than this one (TensorReport::fell_back); absent elsewhere.
  std::optional<Bound> fallback_bound;
  std::string no_bound;                // why no bound is known; empty when one is
  // What the outputs were judged against on this machine and why (references.h, JudgePlan):
  // "golden", "float64" or an emulation's name; the precision judged when this machine's
  // delegate computes in another than the manifest's (precision_reason says why).
  std::string against = "golden";
  std::string judgement;               // one line: against what, with which widening, or why not
  std::string precision_reason;        // empty when the manifest's precision is the one judged
  std::optional<Error> bound_error;    // the Error behind no_bound (derive_bound's
                                       // capability-unavailable, or override_bound's
                                       // invalid-argument for a caller's partial bound)

  // Set when the bundle could not be run at all (steps 1–4): its status and the Error behind it.
  std::optional<Status> refused;
  std::optional<Error> error;

  // The accuracy budget the recipe's cost was judged by (manifest's, with the caller's keys), and
  // the bundle-level top-1 agreement where the bundle has a classifier output and an emulation.
  // `budget_note`: a budget key that could not be judged here, and why (e.g. top1_agreement on a
  // bundle without labels, or without a recipe emulation: fp32 costs nothing by definition).
  std::optional<Budget> budget;
  std::optional<Top1Agreement> top1;
  std::vector<GreedyAgreement> greedy;  // one per sequence case, where greedy.output is named
  std::string budget_note;

  std::vector<CaseReport> cases;       // one per golden case of the methods replayed, in the
                                       // manifest's order (method by method)
  bool passed = false;                 // every case passed, at least one ran, a bound was known

  // The first Error in the outcome (refusal, then the cases in order), if any.
  const Error* first_error() const;
};

// The whole replay of one bundle (a directory or its NAME.etproof.json). Never throws for what a
// bundle can do wrong (see above); a caller's partial bound that cannot be completed for its
// recipe (override_bound refuses it) is a no-bound outcome, with override_bound's reason. Not
// thread-safe with respect to the same bundle directory being
// rewritten while it runs (nothing is).
[[nodiscard]] ParityReport replay(const std::filesystem::path& bundle,
                                  const ReplayOptions& options = {});

// The same on a bundle opened and a model loaded by the caller (EXPECT_PARITY: the model may come
// from another bundle than the goldens). Steps 5–6 only; the goldens' manifest decides the bound.
// A method in options.methods the goldens' manifest does not list: refused as above. Each case
// runs through model.run(case's method, …).
[[nodiscard]] ParityReport replay(const Bundle& goldens, LoadedModel& model,
                                  const ReplayOptions& options = {});

// Several bundles, replayed `jobs` at once (threads; ≤ 1: one after another), returned in the
// order of `paths` whatever the scheduling. The second form gives each path its own options
// (`options[i]` for `paths[i]`; the sizes must be equal, else Error{kInvalidArgument}). Each is one replay() with no state shared with the
// others. An allocation that fails (std::bad_alloc) while replaying one makes its report a refusal
// with Error{kOutOfMemory} (status run-failed: it could not be run here). Any other exception
// that escapes replay() for one bundle (none is expected) is kept as text in `unforeseen`; neither
// stops the others.
struct BundleReplay {
  std::filesystem::path path;
  std::optional<ParityReport> report;
  std::string unforeseen;  // set when report is absent
};
[[nodiscard]] std::vector<BundleReplay> replay_all(const std::vector<std::filesystem::path>& paths,
                                                   const ReplayOptions& options, size_t jobs);
[[nodiscard]] std::vector<BundleReplay> replay_all(const std::vector<std::filesystem::path>& paths,
                                                   const std::vector<ReplayOptions>& options,
                                                   size_t jobs);

// Initializes, once, what every replay shares: ExecuTorch's runtime (runtime_init) and this
// binary's backend registry (each delegate's is_available() answer, OPENVINO_LIB_PATH). replay()
// does it on first use; call it before replaying from several threads at once (build_matrix and
// measure_tolerances do, when jobs > 1), so no two threads race to do it.
void prepare_for_threads();

// Steps 1–4 alone, for a caller that runs its own inputs (classify): the opened bundle and the
// loaded model (every method the manifest lists), or the status and Error that stopped it.
struct Prepared {
  std::optional<Bundle> bundle;
  std::optional<LoadedModel> model;
  std::optional<Status> refused;
  std::optional<Error> error;
};
[[nodiscard]] Prepared prepare(const std::filesystem::path& bundle);

// Whether this binary can run the delegates `ids` (a manifest's or a program's): nullopt when
// every id is registered and available; else not-linked (some id is not registered here — the
// reason names it, the registered ids and what the runtime needs) or unavailable (registered, but
// is_available() is false on this machine).
struct Refusal {
  Status status;
  std::string reason;
};
[[nodiscard]] std::optional<Refusal> check_delegates(const std::vector<std::string>& ids,
                                                     const std::string& backend_key);

// The throwing form: replay(), then the first Error of the outcome rethrown (a bundle that could
// not be run, or a case that could not be measured). Drift is returned, never thrown.
[[nodiscard]] ParityReport run_parity(const Bundle& bundle,
                                      const std::optional<Bound>& bound = std::nullopt);
[[nodiscard]] ParityReport run_parity(const Bundle& bundle, LoadedModel& model,
                                      const std::optional<Bound>& bound = std::nullopt);


}  // namespace etproof
