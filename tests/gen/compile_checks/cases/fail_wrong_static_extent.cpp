// 17 columns where the manifest says 16.
#include "tiny.h"
void call(Tiny& tiny) { (void)tiny.run(etproof::Tensor<float, 1, 3, 16, 17>{}); }
