// The inputs struct's member has the manifest input's type: int32 ids do not fit int64.
#include "encdec.h"
void call() {
  etproof_models::Encdec::DecodeInputs in{etproof::Tensor<float, 1, 3>{}, etproof::Tensor<int32_t, 1>{}};
  (void)in;
}
