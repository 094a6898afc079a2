/* benchmarks/fma_peak.c — this machine's float32 fused-multiply-add peak (issue 12 §2): the floor
 * under any engine's latency for a model of known FLOPs. Each thread runs independent FMA chains
 * (kChains accumulators, more than the FMA latency × issue width needs, so the loop is bound by
 * throughput) on the widest vectors the compiler targets (-march=native), for about a second.
 *
 *   cc -O3 -march=native -ffp-contract=fast -pthread benchmarks/fma_peak.c -o build/fma_peak
 *   build/fma_peak [THREADS]      prints: GFLOP/s (1 multiply-add = 2 FLOP), lanes, threads
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
typedef float vec __attribute__((vector_size(LANES * sizeof(float))));
enum { kChains = 12 };
static const long kIters = 200000000;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void* chains(void* out) {
  vec acc[kChains];
  const vec a = (vec){0} + 0.999999f, b = (vec){0} + 1e-7f;
  for (int c = 0; c < kChains; ++c) acc[c] = (vec){0} + (float)c;
  for (long i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;  /* one FMA per lane */
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < LANES; ++l) sum += acc[c][l];
  *(float*)out = sum;  /* keeps the work observable */
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: fma_peak [THREADS]\n");
    return 2;
  }
  pthread_t* t = malloc(sizeof(pthread_t) * (size_t)threads);
  float* sink = malloc(sizeof(float) * (size_t)threads);
  const double t0 = now();
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, chains, &sink[i]);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  const double s = now() - t0;
  const double flop = 2.0 * LANES * kChains * (double)kIters * threads;
  printf("%.1f GFLOP/s float32 FMA peak (%d lanes, %d chains, %d thread%s, %.2f s; sink %g)\n",
         flop / s / 1e9, LANES, kChains, threads, threads == 1 ? "" : "s", s, (double)sink[0]);
  free(t);
  free(sink);
  return 0;
}
