/* etproof_c.h — the stable C ABI of etproof (docs/api.md, "The C ABI").
 *
 * Open a bundle (NAME.pte + NAME.etproof.json + goldens), list its inputs and outputs, run it on
 * buffers the caller owns, gate it against its own goldens, and read why a call failed — from C,
 * or from any language that calls C (Python ctypes, Rust, Go, Swift, Kotlin/JNI, …).
 * Library: libetproof_c.so (soname libetproof_c.so.ETPROOF_C_ABI_VERSION); it exports the
 * etproof_* functions below and nothing else. Pure C: compiles as C11 and as C++.
 *
 * RULES (each function's comment says only what differs)
 *
 * Errors. Nothing is thrown or longjmp'd across this boundary. A function returning int returns
 * 0 on success and -1 on failure; one returning a pointer returns NULL on failure. A failure
 * records the thread's LAST ERROR: a kind (a stable lower-case word, docs/errors.md: "io",
 * "manifest-invalid", "artifact-mismatch", "backend-not-linked", "backend-unavailable",
 * "capability-unavailable", "dtype-mismatch", "dtype-unsupported", "shape-mismatch",
 * "kernel-missing", "load-failed", "run-failed", "npy-invalid", "invalid-argument",
 * "golden-invalid", "out-of-memory", "crashed", … — the same words etproof's CLI prints as
 * "error [KIND]" — or "internal" for an exception etproof did not expect, which is a bug), a
 * message (what went wrong, naming the path, tensor or value) and a remedy (what to do). A
 * successful call leaves the last error as it was (errno-style); etproof_clear_error() clears it.
 * The last error is per thread: a failure on one thread is never seen on another.
 * A NULL handle or pointer argument that must not be NULL is an "invalid-argument" failure, never
 * a crash. A pointer that is not NULL but invalid (freed, too short, a closed handle) cannot be
 * detected: that is undefined behaviour, as in any C API.
 * A crash inside ExecuTorch itself (a signal) cannot be caught in-process; `etproof parity
 * --isolate` / `matrix` run a program in a worker process when that matters.
 *
 * Ownership. The caller owns every buffer it passes (inputs, outputs, result structs) and may
 * free it once the call returns; etproof never keeps a pointer to one. etproof owns every string
 * and array it returns ("borrowed"): never free one, and copy it to keep it past its lifetime:
 *   - etproof_version(), etproof_dtype_name(): static, valid for the life of the process;
 *   - etproof_model_property(), etproof_method_name(), etproof_label(), etproof_tensor_info's
 *     name and shape: valid until etproof_close() of that handle;
 *   - etproof_gate_result's report_text and report_json: valid until the next etproof_gate() on
 *     that handle (by any thread) or etproof_close();
 *   - etproof_last_error_*(): valid until the next failing etproof_* call on the same thread or
 *     etproof_clear_error() there.
 * A handle (etproof_model*) is owned by the caller from etproof_open() until etproof_close().
 *
 * Threads. Any function may be called from any thread. Different handles are independent: open
 * and run one per thread to run in parallel. On ONE handle, etproof_run() and etproof_gate() are
 * serialized by a lock inside the handle: calling them from several threads at once is safe but
 * they run one after another. The describing functions (property, methods, inputs, outputs,
 * labels) read data that never changes after etproof_open() and never wait. etproof_close() must
 * not race with any other call on the same handle (the caller's job, as with free()).
 * The first etproof_open() in a process initializes ExecuTorch's runtime, etproof's backend
 * registry and etproof's filter of ExecuTorch's log (Info lines dropped, Error lines kept;
 * ETPROOF_LOG=info keeps all), once, whatever the threads.
 *
 * Version policy. ETPROOF_C_ABI_VERSION (this header) and etproof_abi_version() (the library)
 * must be equal; check at start-up. It changes — and the soname with it — only when an existing
 * function's signature or meaning, a struct's layout or an enum's value changes; adding a
 * function, a dtype, an error kind or a property key keeps it. etproof_version() is the etproof
 * release ("0.1.0") the library was built from.
 */
#ifndef ETPROOF_C_H
#define ETPROOF_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define ETPROOF_C_API __attribute__((visibility("default")))
#else
#define ETPROOF_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. */
#define ETPROOF_C_ABI_VERSION 1
/* The largest rank an output can have (ExecuTorch's own limit, kTensorDimensionLimit). */
#define ETPROOF_MAX_RANK 16

/* An opened, verified and loaded bundle. Opaque. */
typedef struct etproof_model etproof_model;

/* Element types: the manifest's dtype names (docs/manifest.md), in etproof's order. The values
 * are fixed; struct fields hold them as int32_t. */
typedef enum etproof_dtype {
  ETPROOF_DTYPE_FLOAT32 = 0, /* "float32" */
  ETPROOF_DTYPE_FLOAT16 = 1, /* "float16" (IEEE 754 binary16) */
  ETPROOF_DTYPE_FLOAT64 = 2, /* "float64" */
  ETPROOF_DTYPE_INT8 = 3,    /* "int8" */
  ETPROOF_DTYPE_UINT8 = 4,   /* "uint8" */
  ETPROOF_DTYPE_INT16 = 5,   /* "int16" */
  ETPROOF_DTYPE_INT32 = 6,   /* "int32" */
  ETPROOF_DTYPE_INT64 = 7,   /* "int64" */
  ETPROOF_DTYPE_BOOL = 8     /* "bool" (one byte, 0 or 1) */
} etproof_dtype;

/* An input or output as the manifest declares it (etproof_input_info / etproof_output_info). */
typedef struct etproof_tensor_info {
  const char* name;      /* the manifest's name; borrowed until etproof_close() */
  int32_t dtype;         /* an etproof_dtype */
  size_t rank;           /* entries in shape */
  const int64_t* shape;  /* rank entries, -1 for a dynamic dimension; borrowed until close */
  size_t nbytes;         /* bytes of a dense C-order buffer of that shape and dtype; 0 when a
                            dimension is dynamic */
} etproof_tensor_info;

/* One input of etproof_run(), in the method's input order. Dense, C order (row-major),
 * little-endian as the machine is. Read only; copied before the call returns. */
typedef struct etproof_input {
  int32_t dtype;         /* an etproof_dtype: what `data` holds */
  size_t rank;
  const int64_t* shape;  /* rank entries, each >= 0 (NULL allowed when rank is 0) */
  const void* data;      /* nbytes bytes */
  size_t nbytes;         /* must equal product(shape) * etproof_dtype_size(dtype) */
} etproof_input;

/* One output of etproof_run(), in the method's output order. The caller sets dtype, data and
 * capacity; etproof sets nbytes, rank and shape. */
typedef struct etproof_output {
  int32_t dtype;                    /* in: the buffer's etproof_dtype; must be the output's */
  void* data;                       /* in: the caller's buffer */
  size_t capacity;                  /* in: its size in bytes */
  size_t nbytes;                    /* out: bytes written; when the buffer was too small, the
                                       bytes needed (nothing written) */
  size_t rank;                      /* out: the output's rank */
  int64_t shape[ETPROOF_MAX_RANK];  /* out: its first `rank` entries are the output's shape */
} etproof_output;

/* What etproof_gate() found. Counts are golden cases. */
typedef struct etproof_gate_result {
  int32_t passed;           /* 1: every case ran and agreed within its bound, at least one
                               case ran and a bound is known (etproof parity's exit 0); else 0 */
  size_t cases;             /* golden cases replayed (every method's) */
  size_t agreed;            /* status agreed or agreed-undelegated */
  size_t drifted;           /* status drifted: ran, outside its bound */
  size_t other;             /* any other status (over-budget, no-bound, run-failed,
                               bundle-invalid, …):
                               report_text says which and why */
  const char* report_text;  /* the report as `etproof parity` prints it; borrowed until the
                               next etproof_gate() on the handle or etproof_close() */
  const char* report_json;  /* the same as `etproof parity --json` writes it; same lifetime */
} etproof_gate_result;

/* ---- version ---------------------------------------------------------------------------- */

/* The etproof release this library was built from, e.g. "0.1.0". Static. */
ETPROOF_C_API const char* etproof_version(void);
/* The library's ETPROOF_C_ABI_VERSION. */
ETPROOF_C_API int etproof_abi_version(void);

/* ---- errors (per thread) ------------------------------------------------------------------ */

/* The last error's kind ("" when none), message and remedy ("" when none). Never NULL. */
ETPROOF_C_API const char* etproof_last_error_kind(void);
ETPROOF_C_API const char* etproof_last_error_message(void);
ETPROOF_C_API const char* etproof_last_error_remedy(void);
/* ExecuTorch's own error code (runtime/core/error.h) when the failure came from an ExecuTorch
 * call, else 0. */
ETPROOF_C_API uint32_t etproof_last_error_executorch_code(void);
/* Forgets this thread's last error. */
ETPROOF_C_API void etproof_clear_error(void);

/* ---- dtypes ------------------------------------------------------------------------------- */

/* The manifest's name of a dtype ("float32", …); NULL ("dtype-unsupported") for another value. */
ETPROOF_C_API const char* etproof_dtype_name(int32_t dtype);
/* Bytes per element; 0 ("dtype-unsupported") for a value that is no etproof_dtype. */
ETPROOF_C_API size_t etproof_dtype_size(int32_t dtype);

/* ---- open and close ----------------------------------------------------------------------- */

/* Opens the bundle at `path` (its directory, its NAME.etproof.json or its .pte), checks that
 * this library can run the delegates its manifest records, verifies the program's size and
 * SHA-256 against the manifest, and loads every method into ExecuTorch: the same steps as
 * `etproof parity` before it runs a golden. NULL on failure: "io" (nothing at the path, or it
 * cannot be read), "manifest-invalid" (no valid manifest there), "artifact-mismatch" (the .pte
 * changed since export),
 * "backend-not-linked" / "backend-unavailable" (a delegate this library cannot run here),
 * "kernel-missing", "load-failed", "out-of-memory". */
ETPROOF_C_API etproof_model* etproof_open(const char* path);
/* Frees the handle and everything borrowed from it. NULL: nothing happens. */
ETPROOF_C_API void etproof_close(etproof_model* model);

/* ---- describe ----------------------------------------------------------------------------- */

/* A property of the bundle, by key; borrowed until etproof_close(). Keys: "name" (the bundle's),
 * "model", "backend" (the export key, e.g. "xnnpack"), "recipe", "precision", "compute_unit"
 * ("" when none), "sha256" (the program's, as the manifest records it), "delegates" (the
 * delegate ids in the loaded program, sorted, comma-separated; "" when none), "path" (the
 * bundle directory), "labels_output" (the output the labels index; "" when the bundle has no
 * labels). Another key: NULL, "invalid-argument". */
ETPROOF_C_API const char* etproof_model_property(const etproof_model* model, const char* key);

/* The program's methods in the manifest's order (a single-method bundle: "forward"). */
ETPROOF_C_API int etproof_method_count(const etproof_model* model, size_t* count);
ETPROOF_C_API const char* etproof_method_name(const etproof_model* model, size_t index);

/* A method's inputs and outputs (method NULL: the first method). An unknown method or an index
 * past the count: "invalid-argument". */
ETPROOF_C_API int etproof_input_count(const etproof_model* model, const char* method,
                                      size_t* count);
ETPROOF_C_API int etproof_output_count(const etproof_model* model, const char* method,
                                       size_t* count);
ETPROOF_C_API int etproof_input_info(const etproof_model* model, const char* method, size_t index,
                                     etproof_tensor_info* info);
ETPROOF_C_API int etproof_output_info(const etproof_model* model, const char* method,
                                      size_t index, etproof_tensor_info* info);

/* The manifest's class labels (of the output "labels_output" names): count 0 when none. */
ETPROOF_C_API int etproof_label_count(const etproof_model* model, size_t* count);
ETPROOF_C_API const char* etproof_label(const etproof_model* model, size_t index);

/* ---- run ---------------------------------------------------------------------------------- */

/* Runs `method` (NULL: the first method) once. `inputs` has exactly the method's input count,
 * in its order; `outputs` exactly its output count, in its order. Everything is checked before
 * the program runs, and no output buffer is written unless the whole call succeeds:
 *   - a count that differs, a NULL array, data NULL with nbytes > 0, shape NULL with rank > 0, a
 *     negative dimension, nbytes other than product(shape) * dtype size: "invalid-argument";
 *   - a dtype value that is no etproof_dtype: "dtype-unsupported";
 *   - an input whose dtype is not the manifest's: "dtype-mismatch"; whose shape is not (a
 *     dynamic dimension outside its exported range included): "shape-mismatch";
 *   - an output buffer whose dtype is not the output's: "dtype-mismatch";
 *   - an output buffer smaller than the output: "invalid-argument", with that output's nbytes,
 *     rank and shape set to what it needs (known before running when the shape is static);
 *   - ExecuTorch failing while it runs: "run-failed" (etproof_last_error_executorch_code()).
 * Serialized per handle (see Threads). */
ETPROOF_C_API int etproof_run(etproof_model* model, const char* method,
                              const etproof_input* inputs, size_t n_inputs,
                              etproof_output* outputs, size_t n_outputs);

/* ---- gate --------------------------------------------------------------------------------- */

/* Runs every golden case of the bundle (every method's) through this handle's program and gates
 * each output against the bound its recipe and precision imply — etproof's replay engine, as
 * `etproof parity BUNDLE` (without xfail records or caller bounds). Returns 0 whenever the gate
 * ran, whatever it found: drift, or a case that could not be measured (a golden file edited
 * since export, a failed run), is in *result, never a failure of the call. -1 for a NULL
 * argument or "out-of-memory". Serialized per handle with etproof_run(). */
ETPROOF_C_API int etproof_gate(etproof_model* model, etproof_gate_result* result);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ETPROOF_C_H */
