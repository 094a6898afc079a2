// encode's output has a dynamic batch; decode takes [1, 3]: only an explicit conversion, checked
// at run time, may turn one into the other.
#include "encdec.h"
void call(etproof_models::Encdec& m) {
  etproof_models::Encdec::EncodeOutputs code = m.encode(etproof::Tensor<float, 1, 6>{});
  (void)m.decode(code.code, etproof::Tensor<int64_t, 1>{});
}
