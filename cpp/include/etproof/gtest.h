// etproof/gtest.h — the gate as GoogleTest assertions (docs/design.md §8).
//
//   #include <etproof/gtest.h>
//
//   TEST(MyModel, MatchesItsGoldens) {
//     etproof::Bundle bundle = etproof::open_bundle("model-xnnpack-fp32");
//     etproof::LoadedModel model = etproof::LoadedModel::load(bundle);
//     EXPECT_PARITY(model, bundle);
//   }
//
// EXPECT_PARITY(model, goldens)                non-fatal; the test goes on
// ASSERT_PARITY(model, goldens)                fatal; returns from the current function
// EXPECT_PARITY_WITHIN(model, goldens, bound)  the same against a caller's bound
// ASSERT_PARITY_WITHIN(model, goldens, bound)
// EXPECT_BUNDLE_PARITY(path)                   opens and loads the bundle at `path` itself, and
// ASSERT_BUNDLE_PARITY(path)                   SKIPS the test (GTEST_SKIP, with the reason) when
//                                              its backend is not linked, registered or available
//                                              in this binary — the on-device suite that skips by
//                                              name everywhere else — else as EXPECT_PARITY
//
//   TEST(MyModel, OnCoreML) { EXPECT_BUNDLE_PARITY("bundles/model-coreml-fp16"); }
//
// The *_BUNDLE_* macros skip only for Error{kBackendNotLinked} and Error{kBackendUnavailable}
// (while opening or loading); anything else — a path that does not exist (Error{kIo}, naming the
// path, at the macro's file and line), a tampered artifact, a failed run, a drift — fails as
// EXPECT_PARITY does. Like GTEST_SKIP, they skip the rest of the test: use them in the test body.
//
//   model    the program under test: an etproof::LoadedModel lvalue, or an expression that makes
//            one (etproof::LoadedModel::load(bundle)). Run once per golden case; not const (a
//            LoadedModel's run() is not).
//   goldens  where the reference cases live: the etproof::Bundle whose NAME.goldens/ and manifest
//            hold them (usually the bundle the model was loaded from), an expression making one
//            (etproof::open_bundle(dir)), or a bundle path (std::filesystem::path, std::string,
//            const char*: a directory or its NAME.etproof.json), opened inside the assertion.
//            Its manifest also supplies the recipe and precision the bound is derived from
//            (gate.h, derive_bound) and the inputs' dtypes and shapes the model is fed.
//   bound    an etproof::Bound (used as given; the report says "supplied by the caller"), or an
//            etproof::BoundOverride (the derived bound with the given fields replaced, as the
//            CLI's --atol/--rtol/--min-cosine/--min-sqnr do: gate.h, override_bound).
//
// The model may come from another bundle than the goldens (e.g. the same model exported for
// another backend): the goldens' manifest then decides the bound, and inputs/outputs must agree
// (otherwise Error{kShapeMismatch}/{kDtypeMismatch}/{kManifestInvalid}, a failure as below).
// A program with several methods (schema 2, manifest.h): every golden case runs through its own
// method (model.run(METHOD, …)), and the report names it METHOD/CASE; the model must have loaded
// that method (else Error{kInvalidArgument} naming it, a failure as below).
// Cost: one run per golden case (EfficientNet-Lite0's 6 photos on XNNPACK: ~0.3 s).
// ASSERT_* returns from the enclosing function, so, as for every GoogleTest ASSERT_, that
// function must return void.
//
// Every argument is evaluated inside the assertion, exactly once, model first; an lvalue is used
// by reference, anything else is held by value until the assertion ends. So an
// etproof::Error thrown while opening, loading, reading goldens, running or deriving the bound
// (artifact-mismatch, backend-unavailable with the registered ids, run-failed with ExecuTorch's
// code, capability-unavailable when no bound is known for the recipe, …) is a test failure naming
// the error's kind, cause and remedy, never an escaped exception. Any other std::exception fails
// the same way with its what().
//
// On failure the message is the whole parity report (gate.h, to_text): per case and output, the
// worst element (index, actual, reference), max abs error, fraction over the bound, cosine, SQNR,
// the bound as one short line (its rule and resolved numbers; the source and citations are in
// `etproof parity --verbose` and --json), the headroom, and "result: DRIFT (k of n cases within
// the bound)".
// A bundle with no golden cases fails ("nothing was measured"). Drift is measured, never thrown.
//
// Header-only: it needs GoogleTest (the caller's dependency, ≥ 1.10), not the etproof library's.
#pragma once

#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "etproof/render/parity.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/replay/replay.h"

namespace etproof::gtest_detail {

// Each macro argument is evaluated inside a lambda, and what the lambda returns must not point
// into that expression's temporaries (`open_bundle(d).dir`, `s.c_str()`): lvalues are passed by
// reference, everything else is held by value (goldens given as text become a path right there).
template <typename T>
inline constexpr bool kAlwaysFalse = false;

inline LoadedModel& as_model(LoadedModel& m) { return m; }
inline LoadedModel as_model(LoadedModel&& m) { return std::move(m); }
template <typename T>
void as_model(T&&) {
  static_assert(kAlwaysFalse<T>,
                "EXPECT_PARITY(model, goldens): model must be a non-const etproof::LoadedModel "
                "(LoadedModel::run is not const) or an expression making one");
}

inline const Bundle& as_goldens(const Bundle& b) { return b; }
inline Bundle as_goldens(Bundle&& b) { return std::move(b); }
inline std::filesystem::path as_goldens(const std::filesystem::path& p) { return p; }

struct NoBound {};
inline NoBound as_bound(NoBound) { return {}; }
inline Bound as_bound(const Bound& b) { return b; }
inline BoundOverride as_bound(const BoundOverride& o) { return o; }

// goldens: a Bundle is used in place; a path is opened (open_bundle) into `holder`.
inline const Bundle& goldens_bundle(const Bundle& b, std::optional<Bundle>&) { return b; }
inline const Bundle& goldens_bundle(const std::filesystem::path& p, std::optional<Bundle>& holder) {
  holder = open_bundle(p);
  return *holder;
}

// bound: none (derived from the manifest), a whole Bound, or an override of the derived one.
inline std::optional<Bound> caller_bound(NoBound, const Bundle&) { return std::nullopt; }
inline std::optional<Bound> caller_bound(const Bound& b, const Bundle&) { return b; }
inline std::optional<Bound> caller_bound(const BoundOverride& o, const Bundle& g) {
  return override_bound(o, g.manifest.recipe, g.manifest.precision, g.manifest.compute_unit);
}

inline std::string describe_error(const Error& e) {
  std::ostringstream os;
  os << "etproof::Error [" << to_string(e.kind()) << "]: " << e.cause();
  if (e.et_error()) os << " (ExecuTorch error 0x" << std::hex << *e.et_error() << std::dec << ")";
  if (!e.remedy().empty()) os << "\n  remedy: " << e.remedy();
  return os.str();
}

// The predicate-format function behind the macros: each *_fn is a callable evaluating the
// macro's argument, so anything thrown while making it is caught here.
template <typename ModelFn, typename GoldensFn, typename BoundFn>
::testing::AssertionResult parity_assertion(const char* model_expr, const char* goldens_expr,
                                            ModelFn&& model_fn, GoldensFn&& goldens_fn,
                                            BoundFn&& bound_fn) {
  const std::string what = std::string("parity of `") + model_expr + "` against the goldens of `" +
                           goldens_expr + "`";
  try {
    auto&& model = model_fn();
    auto&& goldens = goldens_fn();
    std::optional<Bundle> opened;
    const Bundle& bundle = goldens_bundle(goldens, opened);
    const std::optional<Bound> bound = caller_bound(bound_fn(), bundle);
    const ParityReport report = run_parity(bundle, model, bound);
    if (report.passed)
      return ::testing::AssertionSuccess()
             << what << ": " << report.cases.size() << " cases within "
             << describe_bound(report.bound);
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    failure << what << " failed:\n" << to_text(report);
    if (!report.cases.empty() && !report.bound.caller_supplied)
      failure << "in a test, a caller bound is EXPECT_PARITY_WITHIN(model, goldens, bound) with "
                 "an etproof::Bound or etproof::BoundOverride\n";
    return failure;
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << what << " could not be measured: "
                                         << describe_error(e);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << what << " could not be measured: exception: "
                                         << e.what();
  }
}

// The *_BUNDLE_PARITY macros: the bundle at `path` opened, loaded and gated, or why it is skipped.
struct BundleOutcome {
  std::optional<std::string> skip;  // the reason the backend cannot run here
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
};

inline BundleOutcome bundle_parity(const char* path_expr, const std::filesystem::path& path) {
  BundleOutcome out;
  const std::string what = std::string("parity of the bundle `") + path_expr + "` (" + path.string() + ")";
  try {
    const Bundle bundle = open_bundle(path);
    LoadedModel model = LoadedModel::load(bundle);
    out.result = parity_assertion(
        path_expr, path_expr, [&]() -> LoadedModel& { return model; },
        [&]() -> const Bundle& { return bundle; }, [] { return NoBound{}; });
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kBackendNotLinked || e.kind() == ErrorKind::kBackendUnavailable)
      out.skip = what + ": not runnable in this binary: " + describe_error(e);
    else
      out.result = ::testing::AssertionFailure() << what << " could not be measured: " << describe_error(e);
  } catch (const std::exception& e) {
    out.result = ::testing::AssertionFailure() << what << " could not be measured: exception: " << e.what();
  }
  return out;
}

// EXPECT_PRED_FORMAT1 hands the ready result through: only public GoogleTest macros are used.
inline ::testing::AssertionResult passthrough(const char*, const ::testing::AssertionResult& r) {
  return r;
}

}  // namespace etproof::gtest_detail

#define ETPROOF_PARITY_RESULT_(model, goldens, bound)                                   \
  ::etproof::gtest_detail::parity_assertion(                                           \
      #model, #goldens,                                                                \
      [&]() -> decltype(auto) { return ::etproof::gtest_detail::as_model(model); },     \
      [&]() -> decltype(auto) { return ::etproof::gtest_detail::as_goldens(goldens); }, \
      [&]() { return ::etproof::gtest_detail::as_bound(bound); })

#define EXPECT_PARITY(model, goldens) \
  EXPECT_PRED_FORMAT1(::etproof::gtest_detail::passthrough,  \
                      ETPROOF_PARITY_RESULT_(model, goldens, ::etproof::gtest_detail::NoBound{}))
#define ASSERT_PARITY(model, goldens) \
  ASSERT_PRED_FORMAT1(::etproof::gtest_detail::passthrough,  \
                      ETPROOF_PARITY_RESULT_(model, goldens, ::etproof::gtest_detail::NoBound{}))
#define EXPECT_PARITY_WITHIN(model, goldens, bound) \
  EXPECT_PRED_FORMAT1(::etproof::gtest_detail::passthrough, ETPROOF_PARITY_RESULT_(model, goldens, bound))
#define ASSERT_PARITY_WITHIN(model, goldens, bound) \
  ASSERT_PRED_FORMAT1(::etproof::gtest_detail::passthrough, ETPROOF_PARITY_RESULT_(model, goldens, bound))

// A statement (safe in an unbraced if/else): skip with the reason, or the assertion.
#define ETPROOF_BUNDLE_PARITY_(bundle_path, assertion)                                                  \
  switch (0)                                                                                      \
  case 0:                                                                                         \
  default:                                                                                        \
    if (const ::etproof::gtest_detail::BundleOutcome etproof_outcome_ =                           \
            ::etproof::gtest_detail::bundle_parity(#bundle_path, ::std::filesystem::path(bundle_path)); \
        etproof_outcome_.skip)                                                                    \
      GTEST_SKIP() << *etproof_outcome_.skip;                                                     \
    else                                                                                          \
      assertion(::etproof::gtest_detail::passthrough, etproof_outcome_.result)
#define EXPECT_BUNDLE_PARITY(bundle_path) ETPROOF_BUNDLE_PARITY_(bundle_path, EXPECT_PRED_FORMAT1)
#define ASSERT_BUNDLE_PARITY(bundle_path) ETPROOF_BUNDLE_PARITY_(bundle_path, ASSERT_PRED_FORMAT1)
