// etproof/replay/attribute.h — which layer drifted (docs/design.md §5 "attribution").
//
// A column that drifts says by how much, not where. The export half can write, inside a bundle, a
// *tapped twin* (`NAME/NAME.taps/`, docs/manifest.md "The tapped twin"): the same model lowered for
// the same backend and recipe, with ExecuTorch's intermediate-output taps
// (executorch.devtools.intermediate_output_tap: added before lowering, stripped after), so the
// values a delegate computes inside itself are extra program outputs `tap.NNN`, each with its
// float32 golden and float64 truth. attribute() replays the twin with the one replay engine
// (replay.h): every tap is gated like an output, against the bound its recipe and precision imply,
// and the taps are read in graph order.
//
// What it names (the rules, tried on cases that should name a layer and on cases that should not:
// cpp/tests/integration/attribute_test.cpp):
//   - the earliest drift: the first tap, in graph order, that fails its bound — every tap before it
//     agrees, so this is where the column's values first leave what the recipe allows;
//   - the largest growth: the tap whose SQNR falls most from the tap before it (the first tap's
//     fall is measured from kFloat32ResolutionDb, what an exact float32 value would show);
//   - a culprit, only when the earliest drift is also a step: its SQNR falls at least kCulpritDropDb
//     from the tap before it. Otherwise the error grew over many layers and crossed the bound
//     somewhere along the way, and the report says that there is no single culprit rather than
//     blaming the layer where it happened to cross;
//   - where the recipe's own cost grows most (a twin with a recipe or precision emulation: PT2E int8,
//     float16/bfloat16): the tap whose emulation-against-golden SQNR falls at least kCulpritDropDb
//     from the tap before it. A cost is not a drift (the delegate may follow its recipe exactly
//     there); it is the layer a user would keep in higher precision first.
//
// A quantized recipe's twin taps the converted program at the values it holds
// (python/etproof/export/taps_quantized.py; docs/manifest.md "The tapped twin"); attribute() reads it
// like any other.
//
// Errors (thrown, typed; nothing is written): a bundle without a twin, Error{kInvalidArgument}
// naming the directory looked for and how to export one; a twin whose manifest has no valid `taps`
// record, Error{kManifestInvalid}; a twin exported for another program than the bundle's (its
// `taps.of` name or SHA-256 differs), Error{kArtifactMismatch}; a twin that could not be replayed
// (refused or not measured: replay.h's statuses), that replay's Error; `case_id` not among the
// twin's cases, Error{kInvalidArgument} naming them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/gate/gate.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"

namespace etproof {

// What one float32 rounding can resolve: the SQNR of a value stored exactly to float32's 24-bit
// significand, 6.02·24 + 1.76 dB (the quantization-noise formula for a full-scale signal). An
// identical tap (SQNR +inf) counts as this much when a step is measured: no float32 computation
// can show more.
inline constexpr double kFloat32ResolutionDb = 146.2;

// The fall in SQNR, at the earliest drifting tap, that makes it the culprit: 20 dB, a tenfold
// error amplitude relative to the signal in one layer. A layer that only adds its own rounding to
// the error it was handed at most doubles the error power (3 dB) when its own rounding equals all
// that came before; a gradually accumulating error (a reduced precision everywhere, bfloat16)
// moves in steps of a few dB. A layer that amplifies relative error by ill-conditioning (a
// subtraction of near-equal values) can exceed it — it is then where the error grew, and named so.
inline constexpr double kCulpritDropDb = 20.0;

// The source line that created a tapped node, from its stack trace at export.
struct TapSource {
  std::string file;  // as recorded (relative to the export's working directory when under it)
  int64_t line = 0;
  std::string code;  // that line, stripped; may be empty
};

// One tap of the twin (`taps.points[i]` of its manifest).
struct TapPoint {
  std::string output;        // the twin's output carrying it: "tap.003"
  size_t index = 0;          // graph (execution) order, 0-based
  std::string node;          // the FX node's name ("aten_gelu_default")
  std::string op;            // its operator ("aten.gelu.default")
  std::string module_path;   // the eager module it belongs to ("act"); empty when unknown
  std::string module_class;  // its class ("GELU"); empty when unknown
  std::optional<TapSource> source;
  bool delegated = false;           // produced inside a delegate in the twin
  bool delegation_matches = true;   // this operator is delegated alike in twin and shipped program
  std::optional<size_t> eligible_index;  // its index among the program's eligible nodes (taps.eligible);
                                         // absent in twins written before it was recorded
  std::optional<std::vector<std::string>> feeds;  // the model outputs its value reaches; absent: unknown
};

// The `taps` record of a twin's manifest.
struct TapsRecord {
  std::string of_name;              // the shipped bundle's name
  std::string of_artifact_sha256;   // the shipped .pte's SHA-256 when the twin was written
  std::string selection;            // "every" | "spaced"
  size_t eligible = 0;              // nodes that could have been tapped
  size_t shipped_delegate_calls = 0;
  size_t twin_delegate_calls = 0;
  bool delegation_matches = true;   // the twin's delegation per operator equals the shipped one's
  std::optional<std::pair<size_t, size_t>> range;  // eligible nodes FIRST..LAST the taps were chosen
                                                   // in (a narrowed twin: --bisect); absent: all
  std::string exported_from;        // the MODEL `etproof export` was given; empty: unknown
  std::vector<TapPoint> points;     // graph order
};

// The `taps` record of `twin` (its manifest). Error{kManifestInvalid} listing every problem (field
// path and what is wrong): absent or mistyped fields, a point naming an output the manifest does
// not list, points out of order.
TapsRecord read_taps(const Manifest& twin);

// Where a bundle's twin lies: BUNDLE_DIR/NAME.taps (NAME the shipped manifest's name).
std::filesystem::path twin_dir(const Bundle& shipped);
std::filesystem::path twin_dir(const std::filesystem::path& bundle_dir, const std::string& name);

struct AttributeOptions {
  std::string case_id;  // the golden case to attribute; empty: the first case in which a tap or
                        // an output fails its bound, else the first case
  std::string output;   // the model output to explain: only the taps whose value reaches it
                        // (taps.points[].feeds) are read, and only it is shown and chooses the
                        // case; empty: every tap and output. Error{kInvalidArgument} when it is not
                        // one of the model's outputs, or the twin records no `feeds`
  ReplayOptions replay; // passed to the twin's replay (bound overrides, isolation, …)
};

// One tap as measured in the chosen case.
struct LayerRow {
  TapPoint point;
  TensorReport report;       // the tap gated against its bound (gate.h)
  double step_db = 0;        // SQNR fall from the tap before (kFloat32ResolutionDb for the first);
                             // negative when the SQNR rose
  // What the recipe cost at this tap (question 2, references.h): the recipe's emulation against
  // the float32 golden, where the twin carries one (PT2E-quantized recipes; float16/bfloat16
  // precisions); its SQNR fall from the tap before, as step_db.
  std::optional<RecipeCost> cost;
  double cost_step_db = 0;   // 0 for the first tap with a cost
};

struct Attribution {
  std::string bundle;        // the shipped bundle's name
  std::string model;         // its manifest's model
  std::string twin;          // the twin's directory
  std::string backend, recipe, precision;
  std::string case_id;       // the case attributed
  std::string output;        // AttributeOptions::output (empty: every output)
  std::vector<std::string> cases;  // every case of the twin
  TapsRecord taps;
  ParityReport twin_report;  // the whole replay of the twin (every case, every output and tap)
  std::vector<TensorReport> outputs;  // the model's own outputs in the chosen case
  std::vector<LayerRow> layers;       // the taps in graph order, in the chosen case
  std::optional<size_t> earliest_drift;  // index into layers
  std::optional<size_t> largest_growth;  // index into layers
  bool culprit = false;      // earliest_drift names the layer to blame (see the header comment)
  // Where the recipe's own cost grows most: the tap whose cost SQNR falls most from the tap before
  // (LayerRow::cost_step_db), when that fall reaches kCulpritDropDb — the layer a user would keep in
  // higher precision first. Absent when no tap carries a cost or the cost grew gradually. It is not
  // a drift: the program may follow its recipe exactly there (int8-dynamic, judged against its
  // emulation).
  std::optional<size_t> costliest;
  std::string summary;       // one sentence: agrees everywhere / the culprit / no single culprit;
                             // then, where taps carry the recipe's cost, one naming `costliest`
  bool outputs_passed = false;  // every model output within its bound in the chosen case
};

// The rules of the header comment on rows already measured (a.layers with their reports,
// a.outputs_passed): sets each row's step_db, and earliest_drift, largest_growth, culprit and
// summary. attribute() calls it; it is public so the rules can be tried on curves that should and
// should not name a culprit (attribute_test.cpp).
void find_drift(Attribution& a);

// Replays the twin of `bundle` (a directory or its manifest) and reads its taps in graph order.
// Throws the Errors listed in the header comment.
Attribution attribute(const std::filesystem::path& bundle, const AttributeOptions& options = {});

// ---- --bisect: narrowing the earliest drift with narrower twins --------------------------------
// A twin that taps evenly spaced nodes (`selection: spaced`, over etproof.export.taps.DEFAULT_CAP or the
// byte budget, or `--taps N`) leaves untapped nodes between the last agreeing tap and the earliest
// drift; the drift may have started at any of them. bisect() exports, through the export half
// (`python -m etproof export MODEL --taps --taps-range FIRST:LAST`), a twin that taps the eligible
// nodes from that last agreeing tap to the drifting one, attributes it, and repeats until the
// earliest drift directly follows an agreeing tap (or the program's start), that is until no
// eligible node lies between them. The last agreeing tap is kept in the range so that the drifting
// layer's step is measured from it, as in the wider twin.
struct BisectOptions {
  std::string model;  // the MODEL to export from; empty: the twin's taps.exported_from
  std::filesystem::path work;  // where the narrowed bundles are exported (OUT of `etproof export`);
                               // empty: a temporary directory, removed afterwards
  size_t max_rounds = 8;       // each round exports once (the shipped program and its twin)
};

// One round: the twin attributed and where its earliest drift lies among the eligible nodes.
struct BisectRound {
  std::string twin;                      // its directory
  size_t taps = 0;                       // points of that twin
  std::optional<std::pair<size_t, size_t>> range;  // its taps.range (absent: the whole program)
  std::optional<size_t> drift_eligible;  // the earliest drift's eligible index
  std::optional<size_t> before_eligible; // the last agreeing tap's before it (absent: none)
};

struct Bisection {
  Attribution final;               // the last round's attribution (the narrowest twin)
  std::vector<BisectRound> rounds; // in order; rounds[0] is the bundle's own twin
  bool resolved = false;           // the earliest drift directly follows an agreeing tap (or is the
                                   // first eligible node): no untapped node can have started it
  std::string stopped;             // why the narrowing stopped, one sentence
  std::string kept;                // BisectOptions::work when given (the narrowed bundles stay there);
                                   // empty: they were exported into a temporary directory, removed
};

// Attributes `bundle` and narrows its earliest drift as above. Throws what attribute() throws;
// Error{kInvalidArgument} when no MODEL is known (the twin has no taps.exported_from and
// options.model is empty) or a twin has no eligible indices (exported before they were recorded);
// Error{kCapabilityUnavailable} when the export half is missing or an export fails (its exit status;
// the export's own error is on stderr); Error{kArtifactMismatch} when MODEL no longer
// exports the bundle's program (another .pte SHA-256: the model's code or weights changed).
Bisection bisect(const std::filesystem::path& bundle, const AttributeOptions& attribute_options,
                 const BisectOptions& options = {});

}  // namespace etproof
