// The built `etproof` binary, run as a user runs it (unit): exit codes, stdout/stderr, --json
// parses, for the commands that need no exported bundle. The rest is integration/cli_test.cpp.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;

using Result = etproof::testing::CliResult;
using etproof::testing::parse;
using etproof::testing::quote;

// Runs `etproof ARGS` (each already quoted as needed) with optional environment assignments.
Result etproof_cli(const std::string& args, const std::string& env = "") {
  return etproof::testing::run_etproof(args, env);
}

TEST(Cli, BackendsJsonListsTheLinkedDelegate) {
  const Result r = etproof_cli("backends --json --runtime-only");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = parse(r);
  for (const char* k : {"runtime", "runtime_by_backend", "components", "export", "export_error"})
    EXPECT_TRUE(j.contains(k)) << k << " missing:\n" << r.out;
  bool xnnpack = false;
  for (const auto& b : j.at("runtime")) {
    for (const char* k : {"id", "registered", "available", "linked", "status", "reason", "probe"})
      EXPECT_TRUE(b.contains(k)) << k << " missing in " << b.dump();
    if (b.at("id") == "XnnpackBackend") {
      xnnpack = b.at("registered").get<bool>() && b.at("available").get<bool>();
      EXPECT_TRUE(b.at("probe").contains("status")) << b.dump();
    }
  }
  EXPECT_TRUE(xnnpack) << r.out;
  EXPECT_EQ(j.at("runtime_by_backend").size(), 19u);
  for (const auto& k : j.at("runtime_by_backend"))
    EXPECT_FALSE(k.at("reason").get<std::string>().empty()) << k.dump();
  EXPECT_TRUE(j.at("components").at("offered").is_array());
  EXPECT_TRUE(j.at("components").at("linked").is_array());
  EXPECT_TRUE(j.at("export").is_null()) << "--runtime-only skips the export half";
  EXPECT_NE(j.at("export_error").get<std::string>().find("--runtime-only"), std::string::npos);
  const Result text = etproof_cli("backends --runtime-only");
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("XnnpackBackend"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("runtime half"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("export half"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("wheel components offered"), std::string::npos) << text.out;
}

// The export half missing is said, not fatal: the runtime half still answers.
TEST(Cli, BackendsSaysWhenTheExportHalfIsMissing) {
  const Result r = etproof_cli("backends --json", "ETPROOF_PYTHON=/nonexistent/python");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = parse(r);
  EXPECT_TRUE(j.at("export").is_null());
  EXPECT_NE(j.at("export_error").get<std::string>().find("/nonexistent/python"), std::string::npos);
  EXPECT_FALSE(j.at("runtime").empty());
  const Result text = etproof_cli("backends", "ETPROOF_PYTHON=/nonexistent/python");
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("not answered"), std::string::npos) << text.out;
}

// Remedies name a command the user can run: the export half's own commands through the
// interpreter etproof runs it with (ETPROOF_PYTHON here), never a bare `python -m etproof`.
TEST(Cli, RemediesNameTheCommandTheUserCanRun) {
  const fs::path empty = scratch_dir();
  std::ofstream(empty / "photo.png") << "not read: no bundle is found first";
  const Result r = etproof_cli("classify " + quote((empty / "photo.png").string()) + " --bundles " +
                                   quote(empty.string()),
                               "ETPROOF_PYTHON=/opt/env/bin/python3");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("/opt/env/bin/python3 -m etproof demo --out build/demo"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("or python -m etproof"), std::string::npos) << r.err;
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(etproof_cli("").rc, 2);
  EXPECT_EQ(etproof_cli("no-such-command").rc, 2);
  EXPECT_EQ(etproof_cli("parity").rc, 2);  // BUNDLE is required
  EXPECT_EQ(etproof_cli("--help").rc, 0);
}

TEST(Cli, MatrixOverNothingFails) {
  const fs::path empty = scratch_dir();
  const Result r = etproof_cli("matrix " + quote(empty.string()));
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("nothing was measured"), std::string::npos) << r.out;
  EXPECT_EQ(etproof_cli("matrix " + quote((empty / "missing").string())).rc, 2);
}

TEST(Cli, ExportHandsItsArgumentsToTheExportHalf) {
  // ETPROOF_PYTHON names the interpreter; a missing one is a typed error, not a crash.
  const Result missing =
      etproof_cli("export tiny --backend portable", "ETPROOF_PYTHON=/nonexistent/python");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("error [capability-unavailable]"), std::string::npos) << missing.err;
  // The arguments and the exit code pass through unchanged: a stand-in interpreter that echoes
  // its argv and exits 7.
  const fs::path fake = scratch_dir() / "python";
  std::ofstream(fake) << "#!/bin/sh\necho \"$@\"\nexit 7\n";
  fs::permissions(fake, fs::perms::owner_all);
  const Result r = etproof_cli("export model.py --backend xnnpack --out 'a b'",
                               "ETPROOF_PYTHON=" + quote(fake.string()));
  EXPECT_EQ(r.rc, 7) << r.err;
  EXPECT_EQ(r.out, "-m etproof export model.py --backend xnnpack --out a b\n");
}

}  // namespace
}  // namespace etproof
