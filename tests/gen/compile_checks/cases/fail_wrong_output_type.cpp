// The output read as int64 where the manifest says float32.
#include "tiny.h"
void call(Tiny& tiny) {
  etproof::Tensor<int64_t, 1, 4> y = tiny.run(etproof::Tensor<float, 1, 3, 16, 16>{}).y;
  (void)y;
}
