"""ExecuTorch's BundledProgram (``.bpte``) written from an exported bundle (``export --bpte``).

A ``.bpte`` is ExecuTorch's own carrier of a program with its test inputs and expected outputs
(``executorch.devtools.bundled_program``; in C++ ``bundled_program::load_bundled_input`` /
``verify_method_outputs``): written here, by ExecuTorch's API, from the bundle's ``.pte`` and its
goldens, so that ExecuTorch's own runners can check the same cases etproof checks. Each golden
case of each method is one ``MethodTestCase``: its inputs in the method's order, its expected
outputs the bundle's goldens (the float32 eager model's outputs, as the manifest's ``outputs``
name them). ExecuTorch's runners judge them with their own tolerance; etproof's bound is the
manifest's.

What a ``.bpte`` cannot carry is refused (``BpteUnsupported``, naming the reason): the weights in
a ``.ptd`` (a BundledProgram holds one program), and sequence cases (steps that carry state from
one call to the next: a BundledProgram's cases are independent executions).

Layer 2, the exporter (python/tests/unit/test_layering.py): imports the manifest and ExecuTorch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from etproof.errors import EtproofError
from etproof.manifest import MANIFEST_SUFFIX, read_manifest

BPTE_SUFFIX = ".bpte"


class BpteUnsupported(EtproofError):
    """The bundle holds what a BundledProgram cannot carry (a .ptd, sequence cases)."""

    kind = "export-refused"


def _methods(doc: dict) -> list[tuple[str, dict]]:
    """(method name, its part of the manifest: inputs, outputs, goldens) for each method."""
    if "methods" in doc:
        return [(m["name"], m) for m in doc["methods"]]
    return [("forward", doc)]


def _load(gdir: Path, rel: str):
    import torch

    return torch.from_numpy(np.load(gdir / rel, allow_pickle=False).copy())


def test_suites(bundle: Path, doc: dict) -> list:
    """One ``MethodTestSuite`` per method with golden cases; raises BpteUnsupported."""
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite

    name = doc["name"]
    if doc.get("data_files"):
        raise BpteUnsupported(f"bundle {name} keeps its weights in a .ptd, which a BundledProgram "
                              "cannot carry (it holds one program)",
                              "export without external_weights to write a .bpte")
    gdir = bundle / f"{name}.goldens"
    suites = []
    for method, part in _methods(doc):
        cases = []
        for g in part["goldens"]:
            if "sequence" in g:
                raise BpteUnsupported(
                    f"bundle {name}: case {g['id']} is a step of sequence "
                    f"{g['sequence']['case']}, whose state carries from one call to the next; a "
                    "BundledProgram's test cases are independent executions",
                    "the bundle itself carries its sequences: judge it with etproof parity")
            inputs = [_load(gdir, g["inputs"][s["name"]]) for s in part["inputs"]]
            outputs = [_load(gdir, g["outputs"][s["name"]]) for s in part["outputs"]]
            cases.append(MethodTestCase(inputs=inputs, expected_outputs=outputs))
        if cases:
            suites.append(MethodTestSuite(method_name=method, test_cases=cases))
    return suites


def write_bpte(bundle: str | Path) -> Path:
    """Writes ``BUNDLE/NAME.bpte`` (ExecuTorch's serializer, from ``NAME.pte`` and the goldens);
    returns its path. Raises BpteUnsupported, ManifestError (an unreadable manifest), OSError."""
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    bundle = Path(bundle)
    doc = read_manifest(bundle / f"{bundle.name}{MANIFEST_SUFFIX}")
    suites = test_suites(bundle, doc)
    program = BundledProgram(None, suites, pte_file_path=str(bundle / doc["artifact"]["file"]))
    out = bundle / f"{doc['name']}{BPTE_SUFFIX}"
    out.write_bytes(serialize_from_bundled_program_to_flatbuffer(program))
    return out
