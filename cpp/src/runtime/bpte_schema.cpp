// etproof/runtime/bpte_schema.cpp — ExecuTorch's BundledProgram flatbuffer read (bpte_schema.h).
#include "runtime/bpte_schema.h"

#include "etproof/core/error.h"

#ifdef ETPROOF_HAVE_BPTE
// Generated at build time by Debian's flatc from the executorch wheel's own schema
// (executorch/devtools/bundled_program/schema/bundled_program_schema.fbs; CMakeLists.txt).
#include "bundled_program_schema_generated.h"

namespace etproof::bpte_detail {
namespace bp = bundled_program_flatbuffer;

namespace {

Value value_of(const bp::Value* v) {
  Value out;
  const bp::Tensor* t = v ? v->val_as_Tensor() : nullptr;
  if (!t) return out;
  out.is_tensor = true;
  out.scalar_type = static_cast<int8_t>(t->scalar_type());
  if (t->sizes()) out.sizes.assign(t->sizes()->begin(), t->sizes()->end());
  if (t->data()) {
    out.data = t->data()->data();
    out.bytes = t->data()->size();
  }
  return out;
}

std::vector<Value> values_of(const flatbuffers::Vector<flatbuffers::Offset<bp::Value>>* vs) {
  std::vector<Value> out;
  if (vs)
    for (const bp::Value* v : *vs) out.push_back(value_of(v));
  return out;
}

}  // namespace

Parsed parse_bpte(const std::vector<uint8_t>& file, const std::string& origin) {
  const auto refuse = [&](const std::string& why) {
    return Error(ErrorKind::kManifestInvalid, origin + ": not a BundledProgram etproof can judge: " + why,
                 "write the .bpte with ExecuTorch's serialize_from_bundled_program_to_flatbuffer "
                 "(executorch.devtools.bundled_program.serialize), or etproof export --bpte");
  };
  if (file.size() < 8 || !bp::BundledProgramBufferHasIdentifier(file.data()))
    throw refuse("its file identifier is not BP08 (ExecuTorch's BundledProgram schema)");
  flatbuffers::Verifier verifier(file.data(), file.size());
  if (!bp::VerifyBundledProgramBuffer(verifier)) throw refuse("its flatbuffer fails verification");
  const bp::BundledProgram* root = bp::GetBundledProgram(file.data());
  if (!root->program() || root->program()->size() == 0) throw refuse("it holds no program");
  if (!root->method_test_suites() || root->method_test_suites()->size() == 0) throw refuse("it holds no test suite");
  Parsed out;
  out.program = root->program()->data();
  out.program_size = root->program()->size();
  for (const bp::BundledMethodTestSuite* s : *root->method_test_suites()) {
    Suite suite;
    suite.method = s->method_name() ? s->method_name()->str() : "";
    if (s->test_cases())
      for (const bp::BundledMethodTestCase* c : *s->test_cases())
        suite.cases.push_back({values_of(c->inputs()), values_of(c->expected_outputs())});
    out.suites.push_back(std::move(suite));
  }
  return out;
}

}  // namespace etproof::bpte_detail
#endif  // ETPROOF_HAVE_BPTE
