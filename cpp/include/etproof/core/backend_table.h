// etproof/core/backend_table.h — the backend table (data/backends.json), as embedded in this binary.
//
// The table is the one home of every per-backend fact (docs/backends.md); the Python export half
// reads the file, and CMake embeds the same file into this binary at configure time (the file is
// a CMAKE_CONFIGURE_DEPENDS, so editing it re-runs configure). The binary is self-contained and
// the table still has one home. Only the fields the runtime half uses are parsed here; the raw
// document is kept for anything else.
//
// Lifetime: backend_table() returns a process-wide table parsed once on first use; references
// into it stay valid for the life of the process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

// One (backend, recipe) pair of the table (its recipes[]): the recipe facts both halves read, so
// that "is this recipe quantized" and "what precision" have one answer (python/etproof/backends.py
// reads the same entries).
struct RecipeEntry {
  std::string recipe;                        // "fp32", "int8-dynamic-per-channel"
  std::string precision;                     // what the delegate computes the recipe in by default
  std::vector<std::string> precisions;       // every precision it may compute it in ([precision] when unlisted)
  bool quantized = false;                    // PT2E-quantized: its manifest records a quantization
  std::optional<std::string> compute_unit;   // Core ML only
  bool planned = false;                      // named in an issue, not exported yet
};

struct BackendEntry {
  std::string key;                       // export key, e.g. "xnnpack"
  std::string name;                      // human name, e.g. "XNNPACK"
  std::string kind;                      // "delegate" | "portable" | "operators"
  std::vector<std::string> runtime_ids;  // ids it registers (WebGPU: "VulkanBackend"); may be []
  // runtime_needs
  std::optional<std::string> wheel_component;  // e.g. "backend_xnnpack"; nullopt: no wheel has it
  std::optional<std::string> build_flag;       // source-build option, e.g. "EXECUTORCH_BUILD_VULKAN"
  std::vector<std::string> runtime_os;
  std::string hardware;
  std::vector<std::string> runtime_env;        // environment the runtime reads (OPENVINO_LIB_PATH)
  // upstream
  std::string upstream_status;                 // "active" | "removed"
  std::optional<std::string> upstream_since;
  std::optional<std::string> upstream_note;
  std::vector<std::string> notes;
  std::vector<RecipeEntry> recipes;            // table order, planned ones included
};

// Which ExecuTorch kernel library registers an operator namespace (the table's kernel_libraries).
struct KernelLibraryEntry {
  std::string name_space;                      // e.g. "aten", "quantized_decomposed"
  std::string library;                         // as ExecuTorch names it, e.g. "ExecuTorch's quantized_kernels"
  std::optional<std::string> wheel_component;  // the wheel's CMake component; nullopt: the wheel ships none
};

struct BackendTable {
  int schema_version = 0;
  std::string executorch;             // the version the facts were checked against
  std::vector<BackendEntry> backends; // table order
  std::vector<KernelLibraryEntry> kernel_libraries;  // table order, one per namespace
  nlohmann::json raw;                 // the document as embedded
};

// The table embedded at build time. Throws Error{kManifestInvalid} naming every field that breaks
// schema/backends.schema.json (or docs/backends.md's other rules) if the embedded document does
// not follow it (configure cannot check it).
const BackendTable& backend_table();

// Parses a table document (the embedded one, or a file read by a test). Throws as above, also for
// a document nested more than 64 deep (checked before `raw` copies it) and for any exception of
// the JSON library.
BackendTable parse_backend_table(const nlohmann::json& doc, const std::string& origin);

// The embedded document's text, byte for byte as data/backends.json was at configure time.
const char* embedded_backend_table_json();

// The entry for an export key, or nullptr.
const BackendEntry* find_backend_entry(const std::string& key);

// The recipe entry of (backend key, recipe), or nullptr.
const RecipeEntry* find_recipe_entry(const std::string& backend, const std::string& recipe);

// Every entry that registers runtime id `id` (VulkanBackend: vulkan and webgpu), table order.
std::vector<const BackendEntry*> entries_for_runtime_id(const std::string& id);

// What the table says runtime id `id` needs, as one clause for a "not linked" message, e.g.
// "CoreMLBackend runs on darwin/ios (Apple CPU, GPU or Neural Engine), component
// executorch::backend_coreml". Uses `backend_key`'s entry when it registers `id` (webgpu, not
// vulkan, for a WebGPU program). Empty when no entry registers `id`.
std::string runtime_needs_text(const std::string& id, const std::string& backend_key);

}  // namespace etproof
