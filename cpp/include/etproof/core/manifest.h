// etproof/core/manifest.h — the bundle manifest, schema_version 1, and 2 for programs with several
// methods (docs/manifest.md).
//
// Reader side of the contract; Python's etproof.manifest is the only writer. Optional fields are
// std::optional: absent means unknown, never a default.
//
// Methods: a schema-1 manifest describes one method, `forward` (top-level inputs, outputs,
// goldens); a schema-2 manifest lists its methods (`methods: [{name, inputs, outputs, goldens}]`).
// The reader gives both the same shape: Manifest::methods lists every method in manifest order
// (schema 1: one, "forward"), Manifest::inputs/outputs are the first method's, and
// Manifest::goldens holds every method's cases in method order, each naming its method.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/core/npy.h"

namespace etproof {

// The schema_version a program whose only method is `forward` is written with (and
// Manifest::schema_version's default). kMaxSchemaVersion: the highest this reader reads; it reads
// every version from kSchemaVersion to it.
inline constexpr int kSchemaVersion = 1;
inline constexpr int kMaxSchemaVersion = 2;

struct FileRef {
  std::string file;     // relative to the bundle directory
  uint64_t bytes = 0;
  std::string sha256;   // lower-case hex
};

// An output's quantization (outputs[i].quantization, optional within schema 1): the scale and
// zero point of the last per-tensor quantize/dequantize feeding it in the converted PT2E graph.
// Absent when unknown (dynamic int8, whose outputs are float; float recipes).
struct OutputQuantization {
  double scale = 0;         // > 0: one quantization step, in the output's units
  int64_t zero_point = 0;
  std::string dtype;        // "int8" | "uint8"
};

// One dynamic dimension of an input or output (inputs[i].dynamic_dims[k], outputs[i]…, optional
// within schema 1): the axis whose shape entry is -1, the name of its torch.export Dim, and the
// range torch.export kept for it (sizes min..max inclusive). The runtime half refuses an input
// size outside it by name.
struct DynamicDim {
  int64_t axis = 0;
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;         // -1 = dynamic dimension
  std::optional<std::string> layout;  // "nchw" / "nhwc", rank-4 only
  // inputs[i].dynamic_dims / outputs[i].dynamic_dims (optional within schema 1), sorted by axis,
  // each axis a -1 of `shape` (checked by the reader). On an input, empty: none recorded (a -1
  // without an entry has no known range; the program's own upper bound still applies). On an
  // output: the dimensions that are an input's dynamic dimension itself, by that input's Dim
  // name (the reader checks one of the method's inputs declares it); LoadedModel::run checks the
  // program returned each at the size that input was given.
  std::vector<DynamicDim> dynamic_dims;
  std::optional<OutputQuantization> quantization;  // outputs only
  // outputs[i].slice_axis (outputs only, optional within schema 1): the axis along which the gate
  // also judges each slice. Absent: the gate's default (the batch axis when it is > 1); -1: the
  // manifest says null, do not slice; otherwise 0 <= axis < rank (checked by the reader). Declared
  // by the user in the model spec.
  std::optional<int64_t> slice_axis;
  // outputs[i].integer_atol (integer and bool outputs only, optional within schema 1): how far,
  // in the output's own units, each element may differ (>= 0). Absent: compared exactly. Declared
  // by the user in the model spec.
  std::optional<double> integer_atol;
};

struct OperatorDelegation {
  std::string op;
  int64_t delegated = 0;
  int64_t non_delegated = 0;
  std::vector<std::string> reasons;  // why not delegated, as the partitioner said; empty: unknown
};

struct Delegation {
  int64_t delegated_nodes = 0;
  int64_t non_delegated_nodes = 0;
  std::vector<OperatorDelegation> by_operator;
};

struct ImagePreprocessing {
  std::string input;            // input tensor name
  std::string color;            // "rgb"
  int64_t resize_shorter = 0;   // pixels
  std::string interpolation;    // "bilinear"
  int64_t crop_h = 0, crop_w = 0;
  double mean[3] = {0, 0, 0};   // in value_range units
  double std[3] = {1, 1, 1};
  double value_min = 0, value_max = 255;
};

struct Labels {
  std::string output;           // output tensor name the labels index
  std::string source;
  std::vector<std::string> names;
};

// Where the weights came from (optional; absent: unknown).
struct Weights {
  std::string kind;    // "pretrained" | "seeded"
  std::string source;  // e.g. a package and version, or the seed and init scheme
};

struct GoldenCase {
  // The method the case runs through: "forward" in a schema-1 manifest, the name of the
  // methods[] entry that lists it in a schema-2 one. Ids are distinct within a method and may
  // repeat across methods; case_label() names a case in reports.
  std::string method;
  std::string id;
  std::string data;                               // "real" | "synthetic"
  std::string origin;
  std::map<std::string, std::string> inputs;      // tensor name -> file in NAME.goldens/
  std::map<std::string, std::string> outputs;
  // goldens[i].references (optional within schema 1): reference name -> output name -> file in
  // NAME.goldens/ (CASE.ref.NAME.OUTPUT.npy) with its size and SHA-256. One entry per reference
  // Manifest::references records as captured, each with a file for every output (checked by the
  // reader). Read them with read_golden_reference (bundle.h).
  std::map<std::string, std::map<std::string, FileRef>> references;
  // goldens[i].files (optional within schema 1; every export writes it): the
  // size and SHA-256 of each file `inputs` and `outputs` name, exactly those. Empty: the bundle
  // predates it, and its golden files are read unhashed. read_golden_inputs/outputs (bundle.h)
  // check them before reading.
  std::vector<FileRef> files;
  // goldens[i].sequence (optional within schema 1 and 2): this case is step `step` (from 0) of
  // the sequence case `case_id`, calls on one loaded program with the state carried between
  // them (docs/design.md §5, "State"). The reader checks each sequence's steps are 0..n-1, each
  // once, over every method. Absent: a single call, from the initial state.
  struct Step {
    std::string case_id;
    int64_t step = 0;
  };
  std::optional<Step> sequence;
};

// A reference the bundle was meant to carry (the manifest's top-level references[NAME], optional
// within schema 1). Names: "float64" (the truth: the eager model in float64), the recipe's name
// for a PT2E-quantized recipe ("int8-dynamic-per-channel", "int8-static-per-channel": the
// converted quantize/dequantize graph run eagerly), "float16" / "bfloat16" (the model and its
// floating inputs cast to that dtype, run eagerly). Computed by python/etproof/export/references.py,
// whose reference_names is the rule of which a bundle gets.
// references[RECIPE].program_at_export (optional): the lowered int8 program run by the export half
// on every golden case, against this emulation (python/etproof/export/references.py,
// program_vs_emulation). The replay judges the column against the emulation with a bound of a
// few steps only where `matched` (references.h, plan_judgement).
struct ProgramAtExport {
  size_t cases = 0;    // golden cases run
  size_t outputs = 0;  // float outputs compared, over all cases
  // max|program − emulation| / the output's quantization scale, over the outputs that record one;
  // nullopt: none does; +inf: a non-finite value where the other is finite (JSON null).
  std::optional<double> max_steps;
  // max|program − emulation| / max|emulation|, over the other float outputs; as max_steps.
  std::optional<double> max_range_error;
  bool matched = false;  // every output within the match criterion (references.h, kMatchSteps)
  std::string machine;   // the export machine: "x86_64 AMD EPYC (Linux)"
};

// The manifest's target (optional): what a target-bound delegate's artifact was compiled for
// (python/etproof/export/targets.py; docs/manifest.md "target"). "openvino-cpu": the OpenVINO CPU
// plugin's compiled blob, which loads only where the plugin states the same runtime requirements
// (`requirements`, as its blob header writes them: "meta=1.0;ov=2026.4.1;isa=Intel AVX2"), with
// the OpenVINO version and ISA class read out of them. A kind this binary does not know is kept
// and shown, not checked (etproof/targets.h).
struct Target {
  std::string kind;
  std::string requirements;
  std::string openvino;  // empty: not recorded
  std::string isa;       // empty: not recorded
};

struct ReferenceInfo {
  bool captured = false;
  std::string description;  // captured: how it was computed
  std::string reason;       // not captured: why not (e.g. an operator without a float64 kernel)
  // A recipe's emulation: what arithmetic it reproduces. "pt2e" (or empty, bundles exported
  // before the field): the converted PT2E graph as it is; "xnnpack-qd8": with its dynamically
  // quantized activations quantized as XNNPACK's qd8 kernels do (per row of a linear's input,
  // per batch element of a convolution's), which matches the lowered program to float32
  // rounding; "torchao": the eager model torchao's quantize_ made (int8-weight-only);
  // "xnnpack-qb4w": that model with its int4 group scales in bfloat16 as XNNPACK keeps them
  // (8da4w); "pt2e-weight-only": a weight-only scheme's converted graph, int8 weights
  // dequantized and the rest float, as the program computes (Core ML's and Vulkan's
  // int8-weight-only) (python/etproof/export/quantize.py, EMULATES).
  std::string emulates;
  std::optional<ProgramAtExport> program_at_export;  // a recipe's emulation, where measured
};

// The user's accuracy budget for what the recipe costs (the recipe's emulation against the
// float32 golden); the manifest's top-level budget, optional within schema 1. Each bound is
// optional; absent: the cost is reported, not judged.
struct Budget {
  std::optional<double> min_sqnr_db;     // dB
  std::optional<double> min_cosine;      // in [-1, 1]
  std::optional<double> top1_agreement;  // fraction of cases whose top-1 class agrees, in [0, 1]
  // budget.min_greedy_tokens (optional within schema 1 and 2): the fewest tokens of each sequence
  // case a greedy decode of the recipe's emulation takes as the float32 model does (greedy_output).
  std::optional<int64_t> min_greedy_tokens;
};

// A module the quantizer left float, and why (quantization.skipped[i]).
struct SkippedModule {
  std::string module;  // fully qualified module name, or "<root>:NODE"
  std::string reason;
};

// The manifest's quantization record, only for quantized recipes.
struct RecipeQuantization {
  std::string scheme;     // what it does, in words (python/etproof/export/quantize.py QUANT_SCHEMES)
  std::string quantizer;  // the PT2E quantizer's class name ("XNNPACKQuantizer"), or the torchao
                          // config given to quantize_ (the 8da4w and int8-weight-only recipes)
  std::vector<SkippedModule> skipped;
  // quantization.group_size (optional within schema 1 and 2): the weights' group along the input
  // features (8da4w: one int4 scale per group of this many); absent where weights are not grouped.
  std::optional<int64_t> group_size;
};

// One method of the program (schema 2's methods[i]; schema 1's top-level fields, as "forward"):
// its ExecuTorch method name ([A-Za-z_][A-Za-z0-9_]*, distinct within the manifest) and its
// signature. Its golden cases are in Manifest::goldens, each naming the method.
struct MethodSpec {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

struct Manifest {
  int schema_version = kSchemaVersion;
  std::string name;
  std::string model;
  std::string engine_name;
  std::string engine_version;
  FileRef artifact;
  std::vector<FileRef> data_files;
  // The buffers the program's methods write (state.mutable_buffers; optional within schema 1 and
  // 2; empty: the program writes none). Non-empty: every golden case starts from the initial
  // state, so the replay runs each case on a freshly loaded method (LoadedModel::reset_state).
  std::vector<std::string> mutable_buffers;
  // state.shared_across_methods (optional, schema 2): the methods share the program's mutable
  // buffers (exported with share_mutable_buffers, planned once in memory id 2), so the runtime
  // loads every method on one set of planned arenas (Module's share_memory_arenas) before any
  // runs, and a sequence case's steps may run through several methods. False: each method
  // plans its own buffers, and sharing arenas would overlay one method's state on another's
  // activations.
  bool state_shared_across_methods = false;
  // greedy.output (optional within schema 1 and 2; empty: none): a language model's logits, a
  // floating output of rank >= 2 whose argmax over the last axis at the last position (axis -2)
  // is the next token a greedy decode takes. The replay reports per sequence case the tokens a
  // greedy decode takes as the float32 model does (ParityReport::greedy). Checked by the reader.
  std::string greedy_output;
  std::string backend;                  // export key requested
  std::vector<std::string> delegates;   // ids present in the program, as recorded at export
  // The operators the program calls outside its delegates, as ExecuTorch's kernel registry names
  // them ("aten::add.out"), sorted and distinct, read from the program at export (optional
  // within schema 1; nullopt: unknown, a bundle exported before the field). LoadedModel::load
  // refuses, naming each, those this binary has no kernel for (etproof/kernels.h).
  std::optional<std::vector<std::string>> operators;
  std::optional<Delegation> delegation;
  std::string recipe;
  std::string precision;
  std::optional<std::string> compute_unit;
  std::optional<Target> target;  // nullopt: the artifact is not target-bound, or predates the field
  std::optional<RecipeQuantization> quantization;
  // Every method, in manifest order, never empty (schema 1: one, "forward", built from the
  // top-level inputs and outputs).
  std::vector<MethodSpec> methods;
  // The first method's inputs and outputs (schema 1: forward's): what single-method callers use.
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::optional<ImagePreprocessing> preprocessing;  // schema 1 only
  std::optional<Labels> labels;                     // schema 1 only
  std::optional<Weights> weights;
  // Every method's golden cases, method by method in Manifest::methods' order, each in its
  // manifest order; GoldenCase::method names its method.
  std::vector<GoldenCase> goldens;
  std::map<std::string, ReferenceInfo> references;  // empty: the bundle predates references
  std::optional<Budget> budget;
  std::map<std::string, std::string> toolchain;
  std::string created_utc;

  nlohmann::json raw;  // the document as read; to_canonical_json() re-serializes it
};

// Parses and validates. Throws Error{kManifestInvalid} naming the file and the field path
// (missing, wrong type, unknown dtype, schema_version other than 1 or 2, name with path
// separators, …; "methods[1].goldens[0].inputs: …" within a schema-2 method). Schema 2 also
// refuses: no or an empty `methods`, a method name that is not [A-Za-z_][A-Za-z0-9_]* or is
// repeated, top-level inputs/outputs/goldens/labels/preprocessing; schema 1 refuses `methods`.
// Also Error{kManifestInvalid} for a document whose arrays and objects nest more than 64 deep
// (any real manifest nests at most 8; "… nested N levels deep (at most 64 are read)"), checked
// before `raw` copies it. An exception of the JSON library never escapes: it is that Error too.
Manifest parse_manifest(const nlohmann::json& doc, const std::string& origin);
// Reads and parses `path`. Throws Error{kManifestInvalid} when nothing is at the path, when it is
// not JSON ("not valid JSON: …", nlohmann's message: a syntax error, a number out of double's range
// such as 1e400, a string that is not UTF-8), when it nests more than 64 deep (refused while
// parsing: nothing that deep is ever built), and as parse_manifest; Error{kIo} when it cannot be
// read.
Manifest read_manifest(const std::filesystem::path& path);

// The method `name` of the manifest. Throws Error{kInvalidArgument} naming it and listing the
// manifest's methods when it has none of that name.
const MethodSpec& find_method(const Manifest& m, const std::string& name);

// Whether the program is anything but a single `forward`: more than one method, or one whose
// name is not "forward". Reports then name cases METHOD/CASE, and errors name the method.
bool has_several_methods(const Manifest& m);

// A golden case's name in reports, the matrix, the ledger and xfail records: a sequence case's
// step "CASE/stepK" (e.g. "prompt0/step3", whatever the method); else "METHOD/CASE" when
// has_several_methods(m) (e.g. "encode/one"), else the plain id (every schema-1 bundle's cases
// keep their ids).
std::string case_label(const Manifest& m, const GoldenCase& c);
// The golden cases of `m` in replay order, each a run of calls: a single call alone, a
// sequence case's steps in step order (gathered where its step 0 is listed). Pointers into
// m.goldens.
std::vector<std::vector<const GoldenCase*>> case_runs(const Manifest& m);

// The methods of `m` that `requested` names, in manifest order (every method when `requested`
// is empty), and those of `requested` it does not list (`missing`, in the order given). A caller
// refuses, or leaves out, a bundle with any missing (replay) or with none selected (the matrix).
struct MethodSelection {
  std::vector<std::string> selected;
  std::vector<std::string> missing;
};
MethodSelection select_methods(const Manifest& m, const std::vector<std::string>& requested);

// The refusal of a requested method `m` does not list: Error{kInvalidArgument} naming the
// methods missing and the bundle's methods. nullopt when every requested method is listed.
std::optional<Error> unknown_methods_error(const Manifest& m, const std::vector<std::string>& requested);

// Canonical serialization (docs/manifest.md): dump(2) + "\n". Byte-identical to Python's writer.
std::string to_canonical_json(const nlohmann::json& doc);

}  // namespace etproof
