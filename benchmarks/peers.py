"""Peers side by side (issue 12 §2): the same model and input on etproof's columns, torch eager and
ONNX Runtime's CPU provider, with the same thread count, alternating engines round by round.

A benchmark, not a test: it prints figures and asserts nothing (docs/benchmarks.md shows its
output). Per round, each engine makes --calls timed calls after --warmup untimed ones; an engine's
figure is the median of its round medians (and the spread of those), so a disturbance during one
round moves one sample of each engine, not one engine. Ratios are to ONNX Runtime and to the
machine's FLOP floor: the model's FLOPs over this machine's float32 FMA peak, measured with
benchmarks/fma_peak.c on the same thread count.

    .venv/bin/python benchmarks/peers.py [--bundles build/demo/bundles] [--threads 1] [--rounds 5]

The input is the first golden case of the model's XNNPACK fp32 bundle (the image the gate judged);
etproof's columns are timed by `build/etproof bench` in its own worker process (load outside the
timing); torch eager and ONNX Runtime in this process. Needs onnxruntime, onnx and onnxscript
(requirements.txt) for the ONNX export (torch.onnx.export).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# EfficientNet-Lite0: 0.77 GFLOP per 224x224 image (about 385 M multiply-adds, 2 FLOP each; the
# figure issue 12 gives, from the EfficientNet-Lite model card).
MODEL_GFLOP = {"efficientnet_lite0": 0.77}


def fma_peak_gflops(threads: int, build: Path) -> float:
    exe = build / "fma_peak"
    src = ROOT / "benchmarks" / "fma_peak.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["cc", "-O3", "-march=native", "-ffp-contract=fast", "-pthread", str(src), "-o", str(exe)],
                       check=True)
    best = 0.0
    for _ in range(3):  # the best of three: the first runs before the clock has ramped up
        out = subprocess.run([str(exe), str(threads)], check=True, capture_output=True, text=True).stdout
        best = max(best, float(out.split()[0]))
    return best


def golden_input(bundle: Path) -> tuple[str, np.ndarray]:
    manifest = json.loads(next(bundle.glob("*.etproof.json")).read_text())
    case = manifest["goldens"][0]
    name, file = next(iter(case["inputs"].items()))
    return name, np.load(bundle / f"{manifest['name']}.goldens" / file)


def time_calls(fn, warmup: int, calls: int) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(samples)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundles", type=Path, default=ROOT / "build" / "demo" / "bundles")
    ap.add_argument("--model", default="efficientnet_lite0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skip-portable", action="store_true", help="leave out the portable column (about 1.5 s a call)")
    return ap.parse_args()


def onnx_session(model, xt, name: str, x: np.ndarray, args: argparse.Namespace):
    """ONNX Runtime's CPU session of `model` (exported with torch.onnx.export, on args.threads
    threads), and its max|diff|/max|ref| against torch eager on x: the same numbers, or the
    comparison is of two different models."""
    import onnxruntime as ort
    import torch

    tmp = Path(tempfile.mkdtemp(prefix="etproof-peers-"))
    onnx_path = tmp / f"{args.model}.onnx"
    with torch.inference_mode():
        torch.onnx.export(model, (xt,), str(onnx_path), input_names=[name], output_names=["logits"], dynamo=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        want = model(xt).numpy()
    got = sess.run(None, {name: x})[0]
    return sess, float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def etproof_columns(etproof: Path, args: argparse.Namespace) -> list[Path]:
    """The model's bundles `etproof bench` measures here (one call each), in name order."""
    columns = []
    for b in sorted(args.bundles.glob(f"{args.model}-*")):
        if args.skip_portable and b.name.endswith("-portable-fp32"):
            continue
        probe = subprocess.run([str(etproof), "bench", "--json", "--no-ledger", "--runs", "1", "--warmup", "0", str(b)],
                               capture_output=True, text=True)
        if probe.returncode == 0 and json.loads(probe.stdout)["bench"][0]["status"] == "measured":
            columns.append(b)
    return columns


def etproof_median_ms(etproof: Path, b: Path, calls: int, args: argparse.Namespace) -> float:
    """One round of `etproof bench` on bundle b: the median of `calls` timed calls, in ms."""
    out = subprocess.run([str(etproof), "bench", "--json", "--no-ledger", "--threads", str(args.threads),
                          "--warmup", str(args.warmup), "--runs", str(calls), str(b)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["bench"][0]["methods"][0]["latency"]["median_ms"]


def run_rounds(engines: dict, columns: list[Path], etproof: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """Each engine's round medians, in ms, the engines alternating round by round (the portable
    column with 3 calls a round)."""
    rounds: dict[str, list[float]] = {k: [] for k in engines}
    for b in columns:
        rounds[f"etproof {b.name.removeprefix(args.model + '-')}"] = []
    for r in range(args.rounds):
        for key, fn in engines.items():
            rounds[key].append(time_calls(fn, args.warmup, args.calls))
        for b in columns:
            slow = b.name.endswith("-portable-fp32")
            calls = 3 if slow else args.calls
            key = f"etproof {b.name.removeprefix(args.model + '-')}"
            rounds[key].append(etproof_median_ms(etproof, b, calls, args))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    return rounds


def report(rounds: dict[str, list[float]], args: argparse.Namespace, build: Path, heading: list[str]) -> None:
    """The table: each engine's median of round medians, their spread, and the ratios to ONNX
    Runtime and to the FLOP floor (the model's FLOPs over this machine's FMA peak); `heading`
    lines go between the first two header lines."""
    peak = fma_peak_gflops(args.threads, build)
    gflop = MODEL_GFLOP.get(args.model)
    floor_ms = gflop / peak * 1000.0 if gflop else None
    ort_ms = statistics.median(rounds["ONNX Runtime (CPU)"])
    print(heading[0])
    print(f"# FMA peak {peak:.1f} GFLOP/s (benchmarks/fma_peak.c, {args.threads} thread(s)); "
          + (f"FLOP floor {floor_ms:.2f} ms ({gflop} GFLOP)" if floor_ms else "no FLOP count for this model"))
    for line in heading[1:]:
        print(line)
    print("| engine | median ms | round medians (min–max) | × ORT | × FLOP floor |")
    print("| --- | ---: | --- | ---: | ---: |")
    for key, v in sorted(rounds.items(), key=lambda kv: statistics.median(kv[1])):
        med = statistics.median(v)
        floor = f"{med / floor_ms:.1f}" if floor_ms else "—"
        print(f"| {key} | {med:.2f} | {min(v):.2f}–{max(v):.2f} | {med / ort_ms:.2f} | {floor} |")


def main() -> int:
    args = parse_args()
    build = ROOT / "build"
    etproof = build / "etproof"

    import onnxruntime as ort
    import torch

    from etproof.demo.demo import efficientnet_lite0

    torch.set_num_threads(args.threads)
    model = efficientnet_lite0.load_model()
    ref_bundle = args.bundles / f"{args.model}-xnnpack-fp32"
    name, x = golden_input(ref_bundle)
    xt = torch.from_numpy(x)

    engines: dict[str, object] = {}

    def eager():
        with torch.inference_mode():
            model(xt)

    engines["torch eager"] = eager
    sess, ort_err = onnx_session(model, xt, name, x, args)
    engines["ONNX Runtime (CPU)"] = lambda: sess.run(None, {name: x})
    rounds = run_rounds(engines, etproof_columns(etproof, args), etproof, args)
    report(rounds, args, build, [
        f"# {args.model}, {args.threads} thread(s), {args.rounds} rounds of {args.calls} calls "
        f"(portable: 3), input {name} {list(x.shape)} from {ref_bundle.name}",
        f"# ONNX Runtime {ort.__version__} against torch {torch.__version__} eager: max|diff|/max|ref| {ort_err:.2e}",
    ])
    return 0

if __name__ == "__main__":
    sys.exit(main())
