// The gate's bound table as a data file (data/bounds.json, embedded at configure time, read by
// cpp/src/gate/bounds.cpp): the embedded bytes are the source tree's, the derived float16 row is
// the numbers its unit-roundoff argument gives, and a bad table is refused naming the file and
// every problem's place.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRepo = fs::path(ETPROOF_SOURCE_DIR);
const fs::path kCorpus = kRepo / "tests" / "schema" / "corpus" / "bounds";

const BoundTerm* row(const std::vector<BoundTerm>& table, const std::string& axis, const std::string& key,
                     const std::string& basis) {
  for (const BoundTerm& t : table)
    if (t.axis == axis && t.key == key && std::find(t.bases.begin(), t.bases.end(), basis) != t.bases.end())
      return &t;
  return nullptr;
}

TEST(BoundTable, EmbeddedFileIsTheSourceTreesByteForByte) {
  EXPECT_EQ(std::string(embedded_bound_table_json()), testing::slurp(kRepo / "data" / "bounds.json"));
}

// The float16 row is derived, not measured: 8 unit roundoffs u = 2^-11 of binary16 on the output's
// range (the column's and its emulation's own output rounding, 2u, by the margin M = 4), a cosine
// floor of 1 - (8u)^2/2 (a relative perturbation of amplitude 8u in every element), and an SQNR
// floor of -20·log10(8u) rounded down to 0.1 dB. The file states the three numbers; this is the
// argument, recomputed.
TEST(BoundTable, TheDerivedFloat16RowIsItsUnitRoundoffArgument) {
  const double u = std::ldexp(1.0, -11);  // IEEE 754-2008 binary16: p = 11
  const double e = 8 * u;
  const auto table = bound_table();
  const BoundTerm* f16 = row(table, "precision", "float16", "reference");
  ASSERT_NE(f16, nullptr);
  EXPECT_TRUE(f16->derived);
  EXPECT_FALSE(f16->target);
  EXPECT_EQ(f16->bases, std::vector<std::string>{"reference"});
  EXPECT_EQ(f16->atol_range, e);
  EXPECT_EQ(f16->atol_qsteps, 0);
  EXPECT_EQ(f16->rtol, 0);
  EXPECT_EQ(f16->min_cosine, 1 - e * e / 2);
  EXPECT_EQ(f16->min_sqnr_db, std::floor(-20 * std::log10(e) * 10) / 10);
  EXPECT_EQ(f16->min_sqnr_db, 48.1);
  EXPECT_NE(f16->source.find("derived, not measured: 8 unit roundoffs of float16 (u = 2^-11)"), std::string::npos)
      << f16->source;
  // No golden-basis float16 row: a float16 column is judged against truth, widened by its emulation.
  EXPECT_EQ(row(table, "precision", "float16", "golden"), nullptr);
}

TEST(BoundTable, ParsedRowsAreTheTableInTheFilesOrder) {
  const auto parsed = parse_bound_table(json::parse(embedded_bound_table_json()), "data/bounds.json");
  const auto table = bound_table();
  ASSERT_EQ(parsed.size(), table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    SCOPED_TRACE(table[i].axis + " " + table[i].key);
    EXPECT_EQ(parsed[i].key, table[i].key);
    EXPECT_EQ(parsed[i].atol_range, table[i].atol_range);
    EXPECT_EQ(parsed[i].min_cosine, table[i].min_cosine);
    EXPECT_EQ(parsed[i].source, table[i].source);
    EXPECT_EQ(parsed[i].bases, table[i].bases);
  }
  // null in the file: no floor, the term adds no noise.
  const BoundTerm* fp32 = row(table, "recipe", "fp32", "golden");
  ASSERT_NE(fp32, nullptr);
  EXPECT_EQ(fp32->min_sqnr_db, std::numeric_limits<double>::infinity());
  EXPECT_EQ(fp32->bases, (std::vector<std::string>{"golden", "reference"}));
}

TEST(BoundTable, ABadTableIsRefusedNamingTheFileAndEveryProblem) {
  try {
    parse_bound_table(json::parse(testing::slurp(kCorpus / "invalid" / "several.json")), "data/bounds.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_EQ(e.cause(),
              "data/bounds.json: rows[4].atol_range: -0.1 is below the minimum 0; rows[5].why: missing; "
              "rows[6].min_cosine: -1.5 is below the minimum -1; rows[7].target: expected a boolean, found a "
              "string; schema_version: must be 1, found 2");
    EXPECT_NE(e.remedy().find("fix data/bounds.json"), std::string::npos) << e.remedy();
  }
}

// derive_bound takes the first row of an axis and key that holds for the basis: a second one
// would never be read, so it is refused.
TEST(BoundTable, ARowRepeatedOnABasisIsRefused) {
  json doc = json::parse(embedded_bound_table_json());
  json again = doc["rows"][0];
  again["bases"] = {"reference"};
  doc["rows"].push_back(again);
  const std::string n = std::to_string(doc["rows"].size() - 1);
  try {
    parse_bound_table(doc, "data/bounds.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_EQ(e.cause(), "data/bounds.json: rows[" + n + "]: recipe 'fp32' against the reference is already rows[0]");
  }
  // The same key on another basis is a row of its own (int8-dynamic-per-channel has one each).
  doc["rows"].erase(doc["rows"].size() - 1);
  EXPECT_NO_THROW(parse_bound_table(doc, "data/bounds.json"));
}

}  // namespace
}  // namespace etproof
