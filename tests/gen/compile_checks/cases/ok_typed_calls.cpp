// The calls a program makes, typed right: they compile (the control for every fail_ case).
#include "encdec.h"
#include "tiny.h"

void calls(Tiny& tiny, etproof_models::Encdec& encdec) {
  etproof::Tensor<float, 1, 3, 16, 16> x;
  Tiny::Outputs out = tiny.run(x);
  etproof::Tensor<float, 1, 4> y = out.y;
  Tiny::Inputs in{x};
  y = tiny.forward(in).y;
  // A static batch into the dynamic one: implicit.
  etproof::Tensor<float, 2, 6> batch;
  etproof_models::Encdec::EncodeOutputs code = encdec.encode(batch);
  // A dynamic extent into a static one: explicit, checked at run time.
  etproof::Tensor<float, 1, 3> one(code.code);
  etproof::Tensor<int64_t, 1> ids;
  (void)encdec.decode(one, ids);
}
