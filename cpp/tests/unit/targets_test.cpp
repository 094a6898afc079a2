// targets_test.cpp (unit) — artifacts bound to a target (etproof/targets.h): an OpenVINO blob
// header read out of a constructed program, a target kind this binary does not know kept and not
// checked, and the status and error kind spelled. The OpenVINO bundle and this machine's
// OpenVINO are integration/targets_test.cpp's.
#include <gtest/gtest.h>

#include <string>

#include "etproof/core/error.h"
#include "etproof/core/status.h"
#include "etproof/runtime/openvino.h"
#include "etproof/runtime/targets.h"

using namespace etproof;

TEST(Targets, TheBlobHeaderIsReadOutOfTheProgram) {
  const std::string text = "meta=1.0;ov=2026.4.1;isa=Intel AVX2";
  std::string blob = "prefix RR_UPCVO";
  blob += std::string("\x01\x00\x00\x00", 4);
  blob += std::string(1, char(text.size())) + std::string(7, '\0');
  blob += text + std::string(8, '\0') + "<?xml";
  EXPECT_EQ(openvino_requirements_in(blob), text);
  // malformed: a length past the end, a length of 0, text that is not printable ASCII, no magic
  std::string past = blob;
  past[std::string("prefix RR_UPCVO").size() + 4] = char(200);
  EXPECT_FALSE(openvino_requirements_in(past.substr(0, 60)));
  std::string zero = blob;
  zero[std::string("prefix RR_UPCVO").size() + 4] = 0;
  EXPECT_FALSE(openvino_requirements_in(zero));
  std::string binary = blob;
  binary[std::string("prefix RR_UPCVO").size() + 12] = '\x01';
  EXPECT_FALSE(openvino_requirements_in(binary));
  EXPECT_FALSE(openvino_requirements_in("no header here"));
}

TEST(Targets, AKindThisBinaryDoesNotKnowIsKeptAndNotChecked) {
  Target t{"qnn-soc", "SM8650", "", ""};
  const TargetCheck c = check_target(t);
  EXPECT_FALSE(c.checked);
  EXPECT_TRUE(c.matches);
  EXPECT_NE(c.why.find("qnn-soc"), std::string::npos) << c.why;
}

TEST(Targets, TheStatusAndTheErrorKindHaveTheirSpellings) {
  EXPECT_EQ(to_string(Status::kNotRunnableHere), "not-runnable-here");
  EXPECT_EQ(status_from_string("not-runnable-here"), Status::kNotRunnableHere);
  EXPECT_EQ(to_string(ErrorKind::kTargetMismatch), "target-mismatch");
  EXPECT_EQ(error_kind_from_string("target-mismatch"), ErrorKind::kTargetMismatch);
  EXPECT_EQ(status_of(Error(ErrorKind::kTargetMismatch, "c", "r")), Status::kNotRunnableHere);
  EXPECT_FALSE(fails_run(Status::kNotRunnableHere));
  EXPECT_FALSE(is_judged(Status::kNotRunnableHere));
  EXPECT_TRUE(says_other_target("[openvino] [CPU] Cannot import compiled blob: it was built for a different runtime "
                                "configuration (OpenVINO version/isa mismatch) and cannot be executed on this device."));
  EXPECT_FALSE(says_other_target("[CPU] Cannot import compiled blob: buffer underflow reading magic."));
}
