// etproof/runtime/kernels.h — the operators a program calls, asked of this binary's kernel registry.
//
// A program's non-delegated part calls operators by name ("aten::add.out": NAMESPACE::NAME, then
// "." and the overload), and ExecuTorch's Method::init looks each up in the kernel registry
// (runtime/kernel/operator_registry.h). One it cannot find fails the load with OperatorMissing
// (0x14) and an Error log line "Missing operator: [N] NAME". The export half records the names in
// the manifest (`operators`, docs/manifest.md); LoadedModel::load asks the registry for each of
// them before loading the method and refuses by name (Error{kKernelMissing}), naming the kernel
// library that would provide each. For a bundle without the field, the names come from
// ExecuTorch's own log of the failed load (missing_operators_in_log).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "etproof/core/error.h"

namespace etproof {

// Every operator name a kernel is registered under in this process, sorted and distinct.
std::vector<std::string> registered_operators();

// The names among `ops` that no kernel registered in this process answers to (any kernel key:
// a kernel specialized for other dtypes still counts as present; Method::init then says which),
// in the given order, each once.
std::vector<std::string> missing_kernels(const std::vector<std::string>& ops);

// The kernel library that would provide `op`, in words, for a remedy, with whether this binary
// links it: aten:: and dim_order_ops:: operators — ExecuTorch's portable_kernels /
// optimized_kernels (the wheel's executorch::kernels_optimized); quantized_decomposed:: —
// quantized_kernels (executorch::kernels_quantized); llama:: — ExecuTorch's custom_ops;
// torchao:: — the TorchAO kernels; any other — "the library that registers OP".
std::string kernel_library_for(const std::string& op);

// The operator names of ExecuTorch's "Missing operator: [N] NAME" log lines, in order, each once.
std::vector<std::string> missing_operators_in_log(const std::vector<std::string>& lines);

// The refusal of bundle `bundle`'s program, which calls `missing` (non-empty) without a kernel
// here: kind kKernelMissing, the cause lists every operator by name and says how they were found
// (`found`), the remedy names the kernel library of each and that the export could decompose it.
Error kernel_missing_error(const std::string& bundle, const std::vector<std::string>& missing,
                           const std::string& found, std::optional<uint32_t> et_error = std::nullopt);

}  // namespace etproof
