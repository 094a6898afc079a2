"""Library output kept off the terminal during an export: ExecuTorch's and the backends' log lines
(C++ and Python logging), progress bars (tqdm) and prints go to a log file beside the export
report; etproof's own lines still reach the terminal through out() and err().

How: file descriptors 1 and 2 are pointed at the log file (so C and C++ output goes there too),
and where sys.stdout/sys.stderr do not write to those descriptors (pytest's capture, a caller's
replacement) they are replaced by the log for the duration. Everything is put back on leaving,
exceptions and interrupts included.

Imports etproof.errors only (which lines of ExecuTorch's log explain a failure).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from pathlib import Path

from etproof.errors import runtime_log_lines

LOG_NAME = "export-log.txt"

# Where etproof's own lines go while library output is redirected (None: sys.stdout/sys.stderr).
_out = None
_err = None


def out():
    """The stream for etproof's own progress lines: the terminal's stdout, also while library
    output goes to the log."""
    return _out if _out is not None else sys.stdout


def err():
    """The stream for etproof's own error lines (see out())."""
    return _err if _err is not None else sys.stderr


class _LogStream(io.TextIOBase):
    """A text stream writing to the log while it is open and dropping text after (a logging
    handler or progress bar created during the export may outlive it)."""

    def __init__(self, log):
        self._log = log

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not self._log.closed:
            self._log.write(s)
        return len(s)

    def flush(self) -> None:
        if not self._log.closed:
            self._log.flush()


def _fd_of(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _flush_all() -> None:
    for s in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            s.flush()
    with contextlib.suppress(Exception):  # C stdio buffers (printf from the libraries)
        import ctypes

        ctypes.CDLL(None).fflush(None)


class Capture:
    """What library_output_to yields: the log's ``path`` and where this run's part ``start``s."""

    def __init__(self, path: Path, start: int):
        self.path = path
        self.start = start

    def runtime_errors(self, limit: int = 12) -> list[str]:
        """The ExecuTorch runtime log lines of this run that explain a failure (a missing
        operator or kernel, a failed check and what it expected, a delegate's status:
        etproof.errors.runtime_log_lines), the last ``limit`` of them, in order."""
        _flush_all()
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                f.seek(self.start)
                text = f.read()
        except OSError:
            return []
        return runtime_log_lines(text)[-limit:]


@contextlib.contextmanager
def library_output_to(path: Path, header: str = ""):
    """While inside: fd 1 and 2 and Python's sys.stdout/sys.stderr write to ``path`` (appended,
    ``header`` and the time first); out() and err() write where stdout and stderr went before.
    Yields a Capture. Restored on any exit. Raises OSError where the log cannot be opened (nothing is changed
    then)."""
    global _out, _err
    path = Path(path)
    log = open(path, "a", encoding="utf-8", errors="replace", buffering=1)
    log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} {header}\n")
    log.flush()
    start = log.tell()
    _flush_all()
    saved: dict[int, int] = {}
    terminals = []
    old_streams = (sys.stdout, sys.stderr)
    old_terms = (_out, _err)
    try:
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                saved[fd] = os.dup(fd)
        term = []
        swapped = []
        for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
            if stream is not None and _fd_of(stream) == fd and fd in saved:
                # writes to this stream reach fd (the log, below); etproof's own lines get a
                # stream on the saved terminal descriptor
                t = open(saved[fd], "w", encoding=getattr(stream, "encoding", None) or "utf-8",
                         errors="replace", buffering=1, closefd=False)
                terminals.append(t)
                term.append(t)
                swapped.append(stream)
            else:
                term.append(stream)
                swapped.append(_LogStream(log))
        for fd in saved:
            os.dup2(log.fileno(), fd)
        _out, _err = term
        sys.stdout, sys.stderr = swapped
        yield Capture(path, start)
    finally:
        _flush_all()
        sys.stdout, sys.stderr = old_streams
        _out, _err = old_terms
        for t in terminals:
            with contextlib.suppress(Exception):
                t.close()
        for fd, keep in saved.items():
            with contextlib.suppress(OSError):
                os.dup2(keep, fd)
            with contextlib.suppress(OSError):
                os.close(keep)
        log.close()
