"""Skip work whose inputs did not change: stamps over etproof's sources, the toolchain and data.

``OUT/.etproof-stamps.json`` maps bundle name -> {"stamp", "result"}. A bundle is reused when its
stamp matches and, for an exported one, its directory still holds a valid manifest whose artifact
hash matches the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from etproof.backends import table_hash
from etproof.export.bundle import file_ref, install, staging_dir
from etproof.errors import EtproofError
from etproof.manifest import all_goldens, read_manifest
from etproof.status import EXPORTED
from etproof.export.taps import twin_name
from etproof.export.toolchain import toolchain_versions

STAMPS_FILE = ".etproof-stamps.json"
_PKG_DIR = Path(__file__).resolve().parents[1]  # the etproof package


# Modules of the package (paths relative to it) that no export reads: a change to them leaves
# every bundle as it was, so it must not invalidate the stamps (a re-export of the golden set
# takes ~20 min on 2 cores). probe/ answers "does this backend lower here?" and writes only its
# own cache (build/.etproof-cache/export-probe.json, keyed by its own cache_key); only
# cli/main.py imports it. cli/plot.py draws the runtime half's reports (etproof attribute
# --plot); only cli/main.py imports it.
NOT_EXPORT_INPUTS = frozenset({"probe/probe.py", "probe/__main__.py", "cli/plot.py"})


def source_digest() -> str:
    """SHA-256 (hex) over every .py file of the etproof package (relative path and bytes) but
    NOT_EXPORT_INPUTS."""
    h = hashlib.sha256()
    for p in sorted(_PKG_DIR.rglob("*.py")):
        if p.relative_to(_PKG_DIR).as_posix() in NOT_EXPORT_INPUTS:
            continue
        h.update(p.relative_to(_PKG_DIR).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def make_stamp(*parts: bytes | str) -> str:
    """A bundle's stamp: SHA-256 (hex) over etproof's sources, the backend table, the toolchain
    versions and the caller's ``parts`` (the bundle name, its inputs' digests)."""
    h = hashlib.sha256()
    h.update(source_digest().encode())
    h.update(table_hash().encode())  # precision and partitioner come from data/backends.json
    h.update(json.dumps(toolchain_versions(), sort_keys=True).encode())
    for p in parts:
        h.update(b"\0" + (p.encode() if isinstance(p, str) else p))
    return h.hexdigest()


def load_stamps(out: Path) -> dict:
    """OUT/.etproof-stamps.json as a dict; {} when it is absent or unreadable."""
    try:
        return json.loads((out / STAMPS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def record_stamp(out: Path, name: str, entry: dict) -> None:
    """Sets bundle ``name``'s entry ({"stamp", "result"}) in OUT/.etproof-stamps.json, keeping
    every other entry as the file holds it now: the file is read, changed and replaced (one
    rename) under an exclusive lock on OUT/.etproof-stamps.lock, so that exports running in
    parallel into one directory (golden-set --jobs) lose none of each other's entries."""
    with _locked(out / (STAMPS_FILE.removesuffix(".json") + ".lock")):
        stamps = load_stamps(out)
        stamps[name] = entry
        tmp = out / (STAMPS_FILE + ".tmp")
        tmp.write_text(json.dumps(stamps, sort_keys=True, indent=2) + "\n")
        os.replace(tmp, out / STAMPS_FILE)


@contextlib.contextmanager
def _locked(path: Path):
    """Holds an exclusive flock(2) on ``path`` (created if absent) while inside."""
    with open(path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def adopt(src: Path, out: Path, name: str, stamp: str) -> dict | None:
    """Copies bundle ``name`` from the bundle directory ``src`` into ``out`` when ``src`` holds it
    up to date for ``stamp`` (same stamp, intact); returns its report result, else None.

    The caller records the stamp in ``out``. A result other than EXPORTED is adopted as is.
    """
    prev = load_stamps(src).get(name)
    if not prev or prev.get("stamp") != stamp:
        return None
    result = prev["result"]
    if result["status"] != EXPORTED:
        return result
    if not bundle_intact(src / name):
        return None
    with staging_dir(out, name) as tmp:
        shutil.copytree(src / name, tmp, dirs_exist_ok=True)
        install(tmp, out / name)
    return result


def bundle_intact(bundle: Path) -> bool:
    """Whether ``bundle`` holds a valid manifest whose artifact and data files (NAME.ptd) match
    the files (size and SHA-256), every golden file it names (size and SHA-256 where the manifest
    lists them in goldens[i].files), and every reference file (size and SHA-256); where the bundle
    holds a tapped twin (NAME/NAME.taps), the twin too, and its ``taps.of`` names this bundle's
    program."""
    try:
        doc = read_manifest(bundle)
        twin = bundle / twin_name(doc["name"])
        if twin.exists() and not (bundle_intact(twin) and read_manifest(twin)["taps"]["of"] == {
                "name": doc["name"], "artifact_sha256": doc["artifact"]["sha256"]}):
            return False
        art = doc["artifact"]
        gdir = bundle / f"{doc['name']}.goldens"
        goldens = all_goldens(doc)
        return file_ref(bundle / art["file"]) == art and all(
            file_ref(bundle / ref["file"]) == ref for ref in doc.get("data_files", [])
        ) and all(
            (gdir / fn).is_file()
            for g in goldens for part in ("inputs", "outputs") for fn in g[part].values()
        ) and all(file_ref(gdir / ref["file"]) == ref
                  for g in goldens for per_output in g.get("references", {}).values()
                  for ref in per_output.values()
        ) and all(file_ref(gdir / ref["file"]) == ref for g in goldens for ref in g.get("files", []))
    except (EtproofError, OSError, KeyError):
        return False
