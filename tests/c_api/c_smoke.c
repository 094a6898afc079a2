/* c_smoke.c — the C ABI from plain C (CTest c_api.c_smoke; built as C11, -pedantic -Werror,
 * against etproof_c.h alone, linked to libetproof_c.so: it proves the header is C).
 *
 *   c_smoke BUNDLE [GOLDEN_INPUT.npy GOLDEN_OUTPUT.npy]
 *
 * Opens BUNDLE (a single-input, single-output float32 bundle with an XNNPACK delegate, e.g. the
 * test bundle tiny-xnnpack-fp32), lists its inputs and outputs, checks that the loaded program
 * holds XnnpackBackend, runs the golden input (when given) and compares with the golden output
 * (float32, within 1e-4 relative or 1e-5 absolute), runs the bundle's own gate (must pass), and
 * checks that wrong calls fail with the right error kind and a message and remedy: NULL path,
 * missing bundle, NULL handles, wrong input size, wrong dtype, wrong shape, short output buffer.
 * Exit 0 all held, 1 not, 77 (CTest's skip) when BUNDLE does not exist.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etproof_c.h"

static int failures = 0;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)

/* The call failed with `kind`, and says what and what to do. */
static void expect_error(int failed, const char* kind, const char* what) {
  CHECK(failed, "%s: succeeded, expected error [%s]", what, kind);
  CHECK(strcmp(etproof_last_error_kind(), kind) == 0, "%s: error [%s], expected [%s]: %s", what,
        etproof_last_error_kind(), kind, etproof_last_error_message());
  CHECK(strlen(etproof_last_error_message()) > 0, "%s: empty message", what);
  CHECK(strlen(etproof_last_error_remedy()) > 0, "%s: empty remedy", what);
  printf("  %-34s -> [%s] %s\n", what, etproof_last_error_kind(), etproof_last_error_message());
  etproof_clear_error();
}

/* A .npy file's float32 data (format 1.0–3.0, little-endian '<f4', C order), malloc'd; its
 * element count in *n. NULL when it cannot be read as such. */
static float* read_npy_f32(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  unsigned char head[10];
  size_t header_len, total, count;
  long data_at, end;
  char* header;
  float* data;
  if (!f) return NULL;
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return NULL;
  }
  if (head[6] == 1) {
    header_len = (size_t)head[8] | ((size_t)head[9] << 8);
    data_at = 10 + (long)header_len;
  } else {
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) {
      fclose(f);
      return NULL;
    }
    header_len = (size_t)head[8] | ((size_t)head[9] << 8) | ((size_t)more[0] << 16) |
                 ((size_t)more[1] << 24);
    data_at = 12 + (long)header_len;
  }
  header = (char*)malloc(header_len + 1);
  if (!header || fread(header, 1, header_len, f) != header_len) {
    free(header);
    fclose(f);
    return NULL;
  }
  header[header_len] = '\0';
  if (!strstr(header, "'<f4'") || strstr(header, "'fortran_order': True")) {
    free(header);
    fclose(f);
    return NULL;
  }
  free(header);
  fseek(f, 0, SEEK_END);
  end = ftell(f);
  total = (size_t)(end - data_at);
  count = total / sizeof(float);
  data = (float*)malloc(total ? total : 1);
  fseek(f, data_at, SEEK_SET);
  if (!data || fread(data, 1, total, f) != total) {
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *n = count;
  return data;
}

int main(int argc, char** argv) {
  struct stat st;
  etproof_model* m;
  etproof_tensor_info in_info, out_info;
  etproof_input in;
  etproof_output out;
  etproof_gate_result gate;
  size_t n_in = 0, n_out = 0, n_methods = 0, i, numel;
  float* x = NULL;
  float* y = NULL;
  const char* delegates;

  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: c_smoke BUNDLE [GOLDEN_INPUT.npy GOLDEN_OUTPUT.npy]\n");
    return 2;
  }
  if (stat(argv[1], &st) != 0) {
    printf("skipped: no bundle at %s (python -m etproof test-bundles --out build/test-bundles)\n",
           argv[1]);
    return 77;
  }

  printf("etproof %s, C ABI %d (header %d)\n", etproof_version(), etproof_abi_version(),
         ETPROOF_C_ABI_VERSION);
  CHECK(etproof_abi_version() == ETPROOF_C_ABI_VERSION, "ABI version differs from the header's");
  CHECK(strcmp(etproof_last_error_kind(), "") == 0, "an error before any call");
  CHECK(strcmp(etproof_dtype_name(ETPROOF_DTYPE_FLOAT32), "float32") == 0, "dtype name");
  CHECK(etproof_dtype_size(ETPROOF_DTYPE_INT64) == 8, "dtype size");

  /* Opening what is not there, or nothing. */
  expect_error(etproof_open(NULL) == NULL, "invalid-argument", "open(NULL)");
  expect_error(etproof_open("/nonexistent/etproof-c-smoke") == NULL, "io",
               "open(missing path)");

  m = etproof_open(argv[1]);
  if (!m) {
    fprintf(stderr, "FAIL: open %s: [%s] %s; remedy: %s\n", argv[1], etproof_last_error_kind(),
            etproof_last_error_message(), etproof_last_error_remedy());
    return 1;
  }
  printf("opened %s: backend %s, recipe %s, delegates in the program: %s\n",
         etproof_model_property(m, "name"), etproof_model_property(m, "backend"),
         etproof_model_property(m, "recipe"), etproof_model_property(m, "delegates"));
  delegates = etproof_model_property(m, "delegates");
  CHECK(delegates && strstr(delegates, "XnnpackBackend"), "no XnnpackBackend in the program");
  CHECK(etproof_method_count(m, &n_methods) == 0 && n_methods == 1, "method count");
  CHECK(strcmp(etproof_method_name(m, 0), "forward") == 0, "method name");
  CHECK(etproof_input_count(m, NULL, &n_in) == 0 && n_in == 1, "one input");
  CHECK(etproof_output_count(m, "forward", &n_out) == 0 && n_out == 1, "one output");
  if (failures) return 1;
  CHECK(etproof_input_info(m, NULL, 0, &in_info) == 0, "input info");
  CHECK(etproof_output_info(m, NULL, 0, &out_info) == 0, "output info");
  printf("input  %s %s rank %zu, %zu bytes\n", in_info.name, etproof_dtype_name(in_info.dtype),
         in_info.rank, in_info.nbytes);
  printf("output %s %s rank %zu, %zu bytes\n", out_info.name, etproof_dtype_name(out_info.dtype),
         out_info.rank, out_info.nbytes);
  CHECK(in_info.dtype == ETPROOF_DTYPE_FLOAT32 && out_info.dtype == ETPROOF_DTYPE_FLOAT32,
        "float32 tensors expected");
  CHECK(in_info.nbytes > 0 && out_info.nbytes > 0, "static shapes expected");
  if (failures) return 1;

  /* The input: the golden's, or a constant. */
  numel = in_info.nbytes / sizeof(float);
  if (argc == 4) {
    size_t n = 0;
    x = read_npy_f32(argv[2], &n);
    CHECK(x && n == numel, "golden input %s: unreadable or %zu elements, expected %zu", argv[2], n,
          numel);
    if (!x) return 1;
  } else {
    x = (float*)malloc(in_info.nbytes);
    for (i = 0; i < numel; ++i) x[i] = 0.5f;
  }
  y = (float*)malloc(out_info.nbytes);

  memset(&in, 0, sizeof in);
  in.dtype = in_info.dtype;
  in.rank = in_info.rank;
  in.shape = in_info.shape;
  in.data = x;
  in.nbytes = in_info.nbytes;
  memset(&out, 0, sizeof out);
  out.dtype = out_info.dtype;
  out.data = y;
  out.capacity = out_info.nbytes;

  CHECK(etproof_run(m, NULL, &in, 1, &out, 1) == 0, "run: [%s] %s", etproof_last_error_kind(),
        etproof_last_error_message());
  CHECK(out.nbytes == out_info.nbytes && out.rank == out_info.rank, "output size or rank");
  for (i = 0; i < out.rank; ++i) CHECK(out.shape[i] == out_info.shape[i], "output shape");
  for (i = 0; i < out.nbytes / sizeof(float); ++i) CHECK(isfinite(y[i]), "output not finite");
  if (argc == 4) {
    size_t n = 0;
    double worst = 0;
    float* golden = read_npy_f32(argv[3], &n);
    CHECK(golden && n == out.nbytes / sizeof(float), "golden output %s", argv[3]);
    for (i = 0; golden && i < n; ++i) {
      double d = fabs((double)y[i] - (double)golden[i]);
      if (d > worst) worst = d;
      CHECK(d <= 1e-5 + 1e-4 * fabs((double)golden[i]), "output[%zu] = %g, golden %g", i, y[i],
            golden[i]);
    }
    printf("golden case: max |output - golden| = %.3g\n", worst);
    free(golden);
  }

  /* The bundle's own gate. */
  CHECK(etproof_gate(m, &gate) == 0, "gate: [%s] %s", etproof_last_error_kind(),
        etproof_last_error_message());
  printf("gate: passed %d, %zu case(s): %zu agreed, %zu drifted, %zu other\n", (int)gate.passed,
         gate.cases, gate.agreed, gate.drifted, gate.other);
  CHECK(gate.passed == 1 && gate.cases > 0 && gate.agreed == gate.cases, "gate did not pass:\n%s",
        gate.report_text);
  CHECK(gate.report_text && strlen(gate.report_text) > 0, "no text report");
  CHECK(gate.report_json && gate.report_json[0] == '{', "no JSON report");

  /* Wrong calls: typed errors, never a crash. */
  in.nbytes = in_info.nbytes - 4;
  expect_error(etproof_run(m, NULL, &in, 1, &out, 1) != 0, "invalid-argument", "run(short input)");
  in.nbytes = in_info.nbytes;
  in.dtype = ETPROOF_DTYPE_INT32; /* same element size: only the dtype is wrong */
  expect_error(etproof_run(m, NULL, &in, 1, &out, 1) != 0, "dtype-mismatch", "run(int32 input)");
  in.dtype = 1234;
  expect_error(etproof_run(m, NULL, &in, 1, &out, 1) != 0, "dtype-unsupported", "run(dtype 1234)");
  in.dtype = in_info.dtype;
  {
    int64_t shape[ETPROOF_MAX_RANK];
    size_t r;
    for (r = 0; r < in_info.rank; ++r) shape[r] = in_info.shape[r];
    shape[0] = in_info.shape[0] * 2; /* twice the elements, and a buffer to match */
    in.shape = shape;
    in.nbytes = in_info.nbytes * 2;
    in.data = malloc(in.nbytes);
    memset((void*)in.data, 0, in.nbytes);
    expect_error(etproof_run(m, NULL, &in, 1, &out, 1) != 0, "shape-mismatch",
                 "run(wrong shape)");
    free((void*)in.data);
    in.shape = in_info.shape;
    in.nbytes = in_info.nbytes;
    in.data = x;
  }
  out.capacity = out_info.nbytes - 1;
  out.nbytes = 0;
  expect_error(etproof_run(m, NULL, &in, 1, &out, 1) != 0, "invalid-argument",
               "run(short output buffer)");
  CHECK(out.nbytes == out_info.nbytes, "a short output buffer: nbytes %zu, expected %zu needed",
        out.nbytes, out_info.nbytes);
  out.capacity = out_info.nbytes;
  expect_error(etproof_run(m, NULL, &in, 0, &out, 1) != 0, "invalid-argument", "run(0 inputs)");
  expect_error(etproof_run(m, "nope", &in, 1, &out, 1) != 0, "invalid-argument",
               "run(unknown method)");
  expect_error(etproof_run(NULL, NULL, &in, 1, &out, 1) != 0, "invalid-argument", "run(NULL model)");
  expect_error(etproof_run(m, NULL, NULL, 1, &out, 1) != 0, "invalid-argument", "run(NULL inputs)");
  expect_error(etproof_gate(NULL, &gate) != 0, "invalid-argument", "gate(NULL model)");
  expect_error(etproof_gate(m, NULL) != 0, "invalid-argument", "gate(NULL result)");
  expect_error(etproof_model_property(m, "no-such-key") == NULL, "invalid-argument",
               "property(unknown key)");
  expect_error(etproof_input_info(m, NULL, 5, &in_info) != 0, "invalid-argument",
               "input_info(index 5)");
  expect_error(etproof_input_count(NULL, NULL, &n_in) != 0, "invalid-argument",
               "input_count(NULL model)");

  /* Still runs after all that. */
  CHECK(etproof_run(m, NULL, &in, 1, &out, 1) == 0, "run after errors: [%s] %s",
        etproof_last_error_kind(), etproof_last_error_message());

  etproof_close(m);
  etproof_close(NULL);
  free(x);
  free(y);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_smoke: all checks held\n");
  return 0;
}
