// The kernel registry of this binary (etproof/kernels.h), asked for real: ExecuTorch's
// portable/optimized kernels are linked, its quantized kernels are not.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/runtime/kernels.h"

namespace etproof {
namespace {

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(Kernels, TheRegistryAnswersByRegistryName) {
  const auto ops = registered_operators();
  ASSERT_FALSE(ops.empty());
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), "aten::add.out"));
  EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), "dim_order_ops::_to_dim_order_copy.out"));
  EXPECT_FALSE(std::binary_search(ops.begin(), ops.end(), "aten::bucketize.Tensor_out"));
  // Each missing name once, in the order asked.
  EXPECT_EQ(missing_kernels({"aten::bucketize.Tensor_out", "aten::add.out", "my_ns::op.out",
                             "aten::bucketize.Tensor_out"}),
            (std::vector<std::string>{"aten::bucketize.Tensor_out", "my_ns::op.out"}));
  EXPECT_TRUE(missing_kernels({}).empty());
}

TEST(Kernels, EachOperatorNamesTheLibraryThatWouldProvideIt) {
  EXPECT_TRUE(contains(kernel_library_for("aten::bucketize.Tensor_out"),
                       "ExecuTorch's portable_kernels / optimized_kernels (executorch::kernels_optimized is "
                       "linked here"));
  // The wheel offers the quantized kernels; this binary does not link them.
  const std::string q = kernel_library_for("quantized_decomposed::quantize_per_tensor.out");
  EXPECT_TRUE(contains(q, "ExecuTorch's quantized_kernels (link executorch::kernels_quantized, "
                          "libexecutorch_kernels_quantized.so")) << q;
  EXPECT_TRUE(contains(kernel_library_for("llama::custom_sdpa.out"), "custom_ops"));
  EXPECT_EQ(kernel_library_for("my_ns::op.out"), "the library that registers my_ns::op.out");
}

TEST(Kernels, MissingOperatorsAreReadFromExecuTorchsLog) {
  // The lines Method::init logs (runtime/executor/method.cpp, ExecuTorch 1.5.1).
  const std::vector<std::string> log = {
      "Missing operator: [0] aten::bucketize.Tensor_out",
      "There are 2 instructions don't have corresponding operator registered. See logs for details",
      "Missing operator: [2] quantized_decomposed::add.out",
      "Missing operator: [5] aten::bucketize.Tensor_out",
      "Missing operator: [7]",
  };
  EXPECT_EQ(missing_operators_in_log(log),
            (std::vector<std::string>{"aten::bucketize.Tensor_out", "quantized_decomposed::add.out"}));
  EXPECT_TRUE(missing_operators_in_log({"Failed to load delegate"}).empty());
}

TEST(Kernels, TheRefusalListsEveryOperatorWithItsLibrary) {
  const Error e = kernel_missing_error("b", {"aten::bucketize.Tensor_out", "my_ns::op.out"}, "how");
  EXPECT_EQ(e.kind(), ErrorKind::kKernelMissing);
  EXPECT_EQ(to_string(e.kind()), "kernel-missing");
  EXPECT_EQ(e.cause(), "bundle 'b': its program calls 2 operators this binary has no kernel for: "
                       "aten::bucketize.Tensor_out, my_ns::op.out (how)");
  EXPECT_TRUE(contains(e.remedy(), "link the kernel library that provides each — aten::bucketize.Tensor_out: "));
  EXPECT_TRUE(contains(e.remedy(), "; my_ns::op.out: the library that registers my_ns::op.out — or re-export"));
  EXPECT_TRUE(contains(e.remedy(), "decompose each into operators this binary has")) << e.remedy();
}

}  // namespace
}  // namespace etproof
