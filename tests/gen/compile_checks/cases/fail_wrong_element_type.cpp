// float64 where the manifest says float32.
#include "tiny.h"
void call(Tiny& tiny) { (void)tiny.run(etproof::Tensor<double, 1, 3, 16, 16>{}); }
