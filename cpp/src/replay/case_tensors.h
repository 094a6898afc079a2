// replay/case_tensors.h — private to the replay layer: one golden case's tensors as the replay
// engine reads them (replay.cpp), checked to certify something.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/gate/references.h"
#include "etproof/runtime/bundle.h"

namespace etproof::detail {

// One golden case's tensors, read from the bundle: its inputs, its golden outputs and the
// references the plan judges against, widens by or costs the recipe with.
struct CaseTensors {
  std::map<std::string, HostTensor> inputs, reference;
  std::map<std::string, std::map<std::string, HostTensor>> refs;  // reference name -> output -> tensor
  std::vector<std::string> edited;  // allow_edited: how the goldens differ from the manifest's hashes
};

// Reads and checks the case's tensors: the inputs, the golden outputs and the references `plan`
// judges against, widens by or costs the recipe with. A golden that certifies nothing (every
// floating input entirely NaN or infinite, or a floating output whose golden has no finite value)
// throws Error{kGoldenInvalid}. allow_edited: goldens that no longer match the manifest's hashes
// are read, and how they differ is recorded (CaseTensors::edited). Throws the readers' errors.
CaseTensors read_case(const Bundle& b, const GoldenCase& g, const std::string& label, const JudgePlan& plan,
                      bool allow_edited);

}  // namespace etproof::detail
