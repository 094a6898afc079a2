// The schema files (schema/, embedded) and the shared corpus (tests/schema/corpus): every valid
// document follows its schema and every invalid one gets exactly the problems its
// NAME.expect.json lists, pointer and message — the same files python/tests/unit/test_schema.py runs
// through the export half's validator, so both halves give each document the same answer.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/core/schema.h"
#include "etproof/core/xfail.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using schema::Document;
using schema::SchemaProblem;

const fs::path kRepo = fs::path(ETPROOF_SOURCE_DIR);
const fs::path kCorpus = kRepo / "tests" / "schema" / "corpus";
constexpr Document kDocuments[] = {Document::kManifest, Document::kExportReport, Document::kXfail,
                                   Document::kBackends, Document::kLedgerRecord, Document::kBounds};

std::vector<fs::path> corpus(Document d, const char* kind) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kCorpus / std::string(schema::name(d)) / kind, ec)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".json") && !n.ends_with(".expect.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json(const fs::path& p) { return json::parse(testing::slurp(p)); }

TEST(Schema, EmbeddedFilesAreTheSourceTreesByteForByte) {
  for (Document d : kDocuments) {
    SCOPED_TRACE(schema::file_of(d));
    EXPECT_EQ(schema::schema_text(d), testing::slurp(kRepo / schema::file_of(d)));
    EXPECT_EQ(schema::document_named(schema::name(d)), d);
  }
  EXPECT_FALSE(schema::document_named("nope").has_value());
}

TEST(Schema, ValidCorpusDocumentsHaveNoProblem) {
  size_t n = 0;
  for (Document d : kDocuments) {
    const auto files = corpus(d, "valid");
    EXPECT_FALSE(files.empty()) << schema::name(d);
    for (const fs::path& f : files) {
      SCOPED_TRACE(f.string());
      const auto problems = schema::validate(read_json(f), d);
      EXPECT_TRUE(problems.empty()) << schema::problem_lines(problems).front();
      ++n;
    }
  }
  EXPECT_GE(n, 10u);
}

TEST(Schema, InvalidCorpusDocumentsHaveExactlyTheExpectedProblems) {
  size_t n = 0;
  for (Document d : kDocuments) {
    const auto files = corpus(d, "invalid");
    EXPECT_FALSE(files.empty()) << schema::name(d);
    for (const fs::path& f : files) {
      SCOPED_TRACE(f.string());
      fs::path expect_path = f;
      expect_path.replace_extension(".expect.json");
      std::vector<SchemaProblem> expect;
      const json expect_doc = read_json(expect_path);  // kept: the loop reads into it
      for (const json& p : expect_doc.at("problems"))
        expect.push_back({p.at("pointer").get<std::string>(), p.at("message").get<std::string>()});
      const auto got = schema::validate(read_json(f), d);
      ASSERT_EQ(got.size(), expect.size()) << [&] {
        std::string s;
        for (const auto& l : schema::problem_lines(got)) s += "\n  " + l;
        return s;
      }();
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].pointer, expect[i].pointer);
        EXPECT_EQ(got[i].message, expect[i].message);
      }
      ++n;
    }
  }
  EXPECT_GE(n, 40u);
}

TEST(Schema, FieldPathsFromPointers) {
  EXPECT_EQ(schema::field_path("/inputs/0/dtype"), "inputs[0].dtype");
  EXPECT_EQ(schema::field_path("/methods/1/inputs/0/dtype"), "methods[1].inputs[0].dtype");
  EXPECT_EQ(schema::field_path("/references/a~1b"), "references.a/b");
  EXPECT_EQ(schema::field_path(""), "");
  EXPECT_EQ(schema::problem_lines({{"", "expected an object, found an array"}}).front(),
            "(document): expected an object, found an array");
}

// The readers report every schema problem through their own error kinds, each with its field.
TEST(Schema, TheManifestReaderListsEverySchemaProblem) {
  const json doc = read_json(kCorpus / "manifest" / "invalid" / "several_problems.json");
  try {
    parse_manifest(doc, "x.etproof.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_EQ(e.cause(),
              "x.etproof.json: artifact.file: '../x.pte' does not match ^[A-Za-z0-9._-]+$; budget: has 0 fields, "
              "expected at least 1; goldens[1].data: unknown value 'fake' (known: 'real', 'synthetic'); "
              "inputs[0].dtype: unknown value 'float8' (known: 'float32', 'float16', 'float64', 'int8', 'uint8', "
              "'int16', 'int32', 'int64', 'bool'); model: missing; zz: is not a field of "
              "schema/manifest.schema.json");
  }
}

TEST(Schema, TheBackendTableReaderListsEverySchemaProblem) {
  const json doc = read_json(kCorpus / "backends" / "invalid" / "several.json");
  try {
    parse_backend_table(doc, "t.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(e.cause().find("t.json: backend 'xnnpack': backends[1].runtime_ids: expected an array, found a "
                             "string; kernel_libraries[0].wheel_component: expected a string or null, found an integer; "
                             "schema_version: must be 1, found 2"),
              std::string::npos)
        << e.cause();
  }
}

TEST(Schema, TheXfailReaderListsEverySchemaProblem) {
  const auto dir = testing::scratch_dir();
  fs::copy_file(kCorpus / "xfail" / "invalid" / "several.json", dir / "xfail.json",
                fs::copy_options::overwrite_existing);
  try {
    read_xfail(dir / "xfail.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kXfailInvalid);
    EXPECT_NE(e.cause().find("notes: is not a field of schema/xfail.schema.json; records[0].model: empty string; "
                             "records[0].recorded: 'yesterday' does not match"),
              std::string::npos)
        << e.cause();
  }
}

TEST(Schema, TheLedgerReaderListsEverySchemaProblemOfARecord) {
  const auto dir = testing::scratch_dir();
  const json bad = read_json(kCorpus / "ledger-record" / "invalid" / "several.json");
  {
    std::ofstream(dir / "ledger.jsonl") << bad.dump() << "\n";
  }
  try {
    read_ledger(dir / "ledger.jsonl");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLedgerInvalid);
    EXPECT_NE(e.cause().find(":1: machine.cores: expected an integer, found a string; numbers.bound.atol: missing; "
                             "numbers.sqnr_db: 'big' does not match ^(nan|inf|-inf)$"),
              std::string::npos)
        << e.cause();
  }
}

// Recipe facts come from the table in both halves: quantized or not, and the precisions.
TEST(Schema, RecipeFactsComeFromTheTable) {
  const RecipeEntry* fp32 = find_recipe_entry("xnnpack", "fp32");
  const RecipeEntry* dyn = find_recipe_entry("xnnpack", "int8-dynamic-per-channel");
  const RecipeEntry* ov = find_recipe_entry("openvino", "fp32");
  const RecipeEntry* fp16 = find_recipe_entry("coreml", "fp16");
  ASSERT_TRUE(fp32 && dyn && ov && fp16);
  EXPECT_FALSE(fp32->quantized);
  EXPECT_TRUE(dyn->quantized);
  EXPECT_EQ(dyn->precision, "float32");
  EXPECT_FALSE(fp16->quantized);
  EXPECT_EQ(fp16->precision, "float16");
  EXPECT_EQ(ov->precisions, (std::vector<std::string>{"float32", "bfloat16", "float16"}));
  EXPECT_EQ(find_recipe_entry("xnnpack", "fp8"), nullptr);
  // Every recipe of the table: quantized exactly where the table says (the export half's
  // recipes.py QUANT_OF agrees with the same entries: python/tests/unit/test_schema.py).
  for (const BackendEntry& b : backend_table().backends)
    for (const RecipeEntry& r : b.recipes) {
      const json& raw_recipes = [&]() -> const json& {
        for (const json& e : backend_table().raw.at("backends"))
          if (e.at("key") == b.key) return e.at("recipes");
        return backend_table().raw;
      }();
      bool found = false;
      for (const json& e : raw_recipes)
        if (e.at("recipe") == r.recipe) {
          found = true;
          EXPECT_EQ(e.at("quantized").get<bool>(), r.quantized) << b.key << "/" << r.recipe;
        }
      EXPECT_TRUE(found);
    }
}

}  // namespace
}  // namespace etproof
