// Rank 3 where the manifest says [1, 3, 16, 16].
#include "tiny.h"
void call(Tiny& tiny) { (void)tiny.run(etproof::Tensor<float, 3, 16, 16>{}); }
