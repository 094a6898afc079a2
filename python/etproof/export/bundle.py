"""Bundle writing: the files of one bundle, and putting the bundle in place atomically.

A bundle is written into a staging directory ``OUT/.NAME.tmp-PID-XXXX`` (staging_dir), then
renamed into place in one step (install); an existing bundle of the same name is kept until the
new one is complete. A process killed mid-export leaves at most its staging directory (a dot
directory, never taken for a bundle); the next export into OUT removes those whose process is
gone (remove_stale_staging). The layout is docs/manifest.md's: NAME.pte, NAME.ptd (only where the backend writes
named data), NAME.etproof.json (written by etproof.manifest), NAME.goldens/CASE.in.INPUT.npy,
CASE.out.OUTPUT.npy and, for the references captured at export, CASE.ref.NAME.OUTPUT.npy.

May import: errors and the standard library, numpy; nothing of torch or ExecuTorch (the program
and tensors it writes come in as objects with their own write methods).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import numpy as np

from etproof.errors import ExportError


# Test hook: ETPROOF_TEST_KILL_AT=POINT kills this process with SIGKILL at that
# point of writing a bundle ("staged", "written", "renaming", "renamed"), as a crash or an OOM
# kill would; python/tests/integration/test_faults.py checks what is left. Never set outside tests.
KILL_AT_ENV = "ETPROOF_TEST_KILL_AT"

# A staging directory: .NAME.tmp-PID-XXXX (this format), or .NAME.tmp-XXXX (before the PID was
# recorded) and .NAME.old-XXXX (replace_dir's aside copy).
_STAGING = re.compile(r"^\..+\.(?:tmp|old)-(?:(\d+)-)?[A-Za-z0-9_]+$")
# How old a staging directory without a PID must be before it counts as abandoned: no export
# of this project takes an hour (the golden set's longest bundle: minutes).
_UNOWNED_STALE_S = 3600.0


def _test_kill(point: str) -> None:
    if os.environ.get(KILL_AT_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _abandoned(entry: os.DirEntry, pid: str | None) -> bool:
    if pid is not None:
        return int(pid) != os.getpid() and not _alive(int(pid))
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > _UNOWNED_STALE_S
    except OSError:
        return False


def remove_stale_staging(out: Path) -> list[str]:
    """Removes the staging directories in ``out`` that no running export owns: those whose PID
    is not a running process, and those without a PID older than an hour. Returns their names.
    Never touches anything else (bundles, files, another live export's staging directory)."""
    removed = []
    try:
        entries = list(os.scandir(out))
    except OSError:
        return removed
    for e in entries:
        m = _STAGING.match(e.name)
        if not m or not e.is_dir(follow_symlinks=False):
            continue
        if _abandoned(e, m.group(1)):
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(e.name)
    return removed


@contextlib.contextmanager
def staging_dir(out: Path, name: str):
    """Yields a new empty directory ``OUT/.NAME.tmp-PID-XXXX``; removes it (and all in it) when
    the block raises anything, interrupts included. Removes stale staging directories of
    killed exports first (remove_stale_staging). ``out`` must exist."""
    remove_stale_staging(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-{os.getpid()}-", dir=out))
    _test_kill("staged")
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def install(tmp: Path, final: Path) -> None:
    """Syncs the staging directory ``tmp`` to disk and renames it to ``final`` (replace_dir).
    The staging directories (``tempfile.mkdtemp``: mode 0700) get the mode a directory made with
    ``mkdir`` would have (0777 less the umask), so a bundle is as readable as its files by the
    users and containers that read it."""
    mode = 0o777 & ~_umask()
    for d in [tmp, *(p for p in tmp.rglob("*") if p.is_dir() and not p.is_symlink())]:
        os.chmod(d, mode)
    _fsync_dir(tmp)
    _test_kill("written")
    replace_dir(tmp, final)


def file_ref(path: Path) -> dict:
    """The manifest's reference to a file: {"file": its name, "bytes": its size, "sha256": the
    hex SHA-256 of its bytes}, read in 1 MiB chunks. Raises OSError when it cannot be read."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return {"file": path.name, "bytes": size, "sha256": h.hexdigest()}


def write_program(et, tmp: Path, name: str) -> tuple[Path, list[str]]:
    """Writes ExecuTorch's program manager ``et`` (to_executorch's result) as ``tmp/NAME.pte``
    (synced to disk) and its named data, where it has any, as ``tmp/NAME.ptd``.

    Returns (the .pte path, the names of the data files written: [] or ["NAME.ptd"]). More than
    one named-data file is ExportError (stage "serialize"): a bundle holds one.
    """
    pte = tmp / f"{name}.pte"
    with open(pte, "wb") as f:
        et.write_to_file(f)
        f.flush()
        os.fsync(f.fileno())
    data = getattr(et, "_tensor_data", None)
    if not data:
        return pte, []
    if len(data) != 1:
        raise ExportError(f"the backend wrote {len(data)} named-data files; a bundle holds one "
                          "(NAME.ptd)", "export with a backend configuration that writes at most "
                          "one .ptd", stage="serialize")
    (cord,) = data.values()
    fn = f"{name}.ptd"
    with open(tmp / fn, "wb") as f:
        cord.write_to_file(f)
    return pte, [fn]


def write_goldens(gdir: Path, cases, outputs, input_names, output_names,
                  prefix: str = "") -> list[dict]:
    """Writes each case's input and output tensors as ``.npy`` (numpy, no pickle) into the
    existing directory ``gdir`` as ``PREFIXCASE.in.INPUT.npy`` / ``PREFIXCASE.out.OUTPUT.npy``;
    returns the manifest's ``goldens`` entries, in case order, each with ``files``: every input
    and output file's file_ref (size and SHA-256), inputs first, in input and output order.

    cases: objects with ``.id``, ``.data``, ``.origin`` and ``.inputs`` (tensors, in input order),
    and ``.sequence`` ((CASE, k) for a sequence case's step k, written as the entry's
    ``sequence``; None or absent for a single call);
    outputs: per case, its output tensors in output order; prefix: ``METHOD.`` for a method of a
    program with several (docs/manifest.md, schema 2), else "".
    """
    goldens = []
    for c, outs in zip(cases, outputs):
        entry = {"id": c.id, "data": c.data, "origin": c.origin, "inputs": {}, "outputs": {},
                 "files": []}
        if getattr(c, "sequence", None) is not None:
            entry["sequence"] = {"case": c.sequence[0], "step": c.sequence[1]}
        for part, names, tensors, io in (("inputs", input_names, c.inputs, "in"),
                                         ("outputs", output_names, outs, "out")):
            for t_name, t in zip(names, tensors):
                fn = f"{prefix}{c.id}.{io}.{t_name}.npy"
                save_npy(gdir / fn, t)
                entry[part][t_name] = fn
                entry["files"].append(file_ref(gdir / fn))
        goldens.append(entry)
    return goldens


def write_references(gdir: Path, per_case: dict, prefix: str = "") -> dict:
    """Writes each case's references (etproof.export.references) into the existing directory ``gdir``
    as ``PREFIXCASE.ref.NAME.OUTPUT.npy`` (prefix: as write_goldens) and returns the golden entries' ``references``:
    {case id: {NAME: {OUTPUT: file_ref}}} (cases without references map to {}).

    per_case: case id -> reference name -> output name -> tensor.
    """
    out: dict = {}
    for cid, refs in per_case.items():
        out[cid] = {}
        for name, tensors in refs.items():
            out[cid][name] = {}
            for o_name, t in tensors.items():
                path = gdir / f"{prefix}{cid}.ref.{name}.{o_name}.npy"
                save_npy(path, t)
                out[cid][name][o_name] = file_ref(path)
    return out


def save_npy(path: Path, t) -> None:
    """Writes a torch tensor as a C-contiguous ``.npy`` file (its own dtype and shape)."""
    # torch's contiguous(), not np.ascontiguousarray: that one makes a 0-d (scalar-shaped)
    # tensor 1-d, and the manifest's shape [] would no longer be the file's.
    arr = t.detach().cpu().contiguous().numpy()
    with open(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_dir(new: Path, final: Path) -> None:
    """Renames ``new`` to ``final``; an existing ``final`` is removed only after the rename.

    On Linux an existing bundle is swapped in one step (renameat2 RENAME_EXCHANGE), so a reader
    never finds the name missing; elsewhere the old bundle is moved aside first.
    """
    if not final.exists() and not final.is_symlink():
        os.rename(new, final)
        return
    if final.is_dir() and not final.is_symlink() and _exchange(new, final):
        _test_kill("renamed")
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old bundle
        return
    old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-{os.getpid()}-", dir=final.parent))
    os.rmdir(old)
    os.rename(final, old)
    _test_kill("renaming")
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(old, final)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0
