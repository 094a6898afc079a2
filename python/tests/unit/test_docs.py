"""The design document and the error reference stay true to the code (no torch, no build needed).

- Every "design.md §N" citation in a tracked file names a section ``## N.`` of docs/design.md,
  whose numbered sections run 1, 2, 3, … without gaps (code cites them by number).
- Every C++ error kind (the strings of ``to_string(ErrorKind)``), every Python error class and its
  ``kind`` (python/etproof/errors.py) and every matrix status word (the strings of
  ``to_string(CellStatus)`` — or ``to_string(Status)`` once the status vocabulary moves) has a row
  in docs/errors.md; each status row says whether it fails the run exactly as ``fails_run`` does.
- Relative links and repository paths named in both documents exist.

The vocabularies are read from the sources, so adding a kind or a status without documenting it
fails here.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DESIGN = REPO / "docs" / "design.md"
ERRORS = REPO / "docs" / "errors.md"

# "DESIGN.md §5", "design.md §3 and §4", "DESIGN.md §5, §7" (case-insensitive).
CITATION = re.compile(r"design\.md((?:\s*(?:,|and|or|/)?\s*§\s*\d+)+)", re.IGNORECASE)
SECTION = re.compile(r"^## (\d+)\. ", re.MULTILINE)


def tracked_files() -> list[Path]:
    """The repository's tracked files (git ls-files), else every file outside build outputs."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return [REPO / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "build", "__pycache__", ".pytest_cache"}
        return [p for p in REPO.rglob("*")
                if p.is_file() and not skip.intersection(p.relative_to(REPO).parts)]


def design_sections() -> list[int]:
    return [int(n) for n in SECTION.findall(DESIGN.read_text(encoding="utf-8"))]


def test_design_sections_are_numbered_without_gaps():
    sections = design_sections()
    assert len(sections) >= 9, (
        f"docs/design.md has numbered sections {sections}; §1–§9 are cited")
    assert sections == list(range(1, len(sections) + 1)), (
        f"docs/design.md's numbered sections are {sections}: code cites them by number, so keep "
        "them 1, 2, 3, … in order (add new ones at the end)")


def test_every_design_citation_names_an_existing_section():
    sections = set(design_sections())
    cited, missing = 0, []
    for path in tracked_files():
        if path == DESIGN or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files cite nothing
        for m in CITATION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for n in map(int, re.findall(r"\d+", m.group(1))):
                cited += 1
                if n not in sections:
                    missing.append(f"{path.relative_to(REPO)}:{line}: {m.group(0).strip()}")
    assert cited > 0, "no 'DESIGN.md §N' citation found: the pattern no longer matches the code"
    assert not missing, ("citations of sections docs/design.md does not have (its sections: "
                         f"{sorted(sections)}):\n" + "\n".join(missing))


# ---- vocabularies read from the C++ sources -----------------------------------------------------

def _function_body(text: str, open_brace: int) -> str:
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_brace:i + 1]
    raise AssertionError("unbalanced braces")


def cpp_function_bodies(signature: str) -> list[tuple[Path, str]]:
    """Bodies of every definition under cpp/ whose parameter list starts with `signature`
    (a regex, e.g. ``to_string\\(\\s*(?:\\w+::)*ErrorKind\\b``)."""
    pattern = re.compile(signature + r"[^;{)]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{")
    found = []
    for path in sorted((REPO / "cpp").rglob("*")):
        if path.suffix not in (".cpp", ".h", ".hpp", ".cc") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for m in pattern.finditer(text):
            found.append((path, _function_body(text, m.end() - 1)))
    return found


def case_strings(body: str) -> list[tuple[str, str]]:
    """``case Enum::kName: return "word";`` lines: [("kName", "word"), …]."""
    return [(label.split("::")[-1], word) for label, word in
            re.findall(r'case\s+([\w:]+)\s*:\s*return\s+"([^"]*)"\s*;', body)]


def vocabulary(enum_names: str) -> list[tuple[str, str]]:
    """(enumerator, word) of every to_string over the enums named (a regex alternation)."""
    bodies = cpp_function_bodies(r"\bto_string\(\s*(?:\w+::)*(?:" + enum_names + r")\b")
    assert bodies, (f"no to_string({enum_names} …) definition under cpp/: teach test_docs.py "
                    "where it is")
    words = [pair for _path, body in bodies for pair in case_strings(body)]
    assert words, f"to_string({enum_names} …) has no `case …: return \"…\";` lines"
    return words


def error_kinds() -> dict[str, str]:
    return dict(vocabulary("ErrorKind"))


def status_words() -> list[tuple[str, str]]:
    return vocabulary("CellStatus|Status")


def fails_run() -> dict[str, bool]:
    """fails_run's switch: {"kDrifted": True, "kAgreed": False, …}."""
    bodies = cpp_function_bodies(r"\bbool\s+fails_run\(")
    assert bodies, "no fails_run(…) definition under cpp/: teach test_docs.py where it is"
    verdict: dict[str, bool] = {}
    for _path, body in bodies:
        pending: list[str] = []
        for label, ret in re.findall(r"case\s+([\w:]+)\s*:|return\s+(true|false)\s*;", body):
            if label:
                pending.append(label.split("::")[-1])
            elif pending:
                verdict.update({p: ret == "true" for p in pending})
                pending = []
    assert verdict, ("fails_run is not a switch of `case …:` labels and `return true/false;`: "
                     "teach test_docs.py to read it")
    return verdict


def enum_enumerators(enum: str) -> list[str]:
    for path in sorted((REPO / "cpp").rglob("*.h")):
        m = re.search(r"enum\s+class\s+" + enum + r"\b[^{]*\{(.*?)\};",
                      path.read_text(encoding="utf-8"), re.DOTALL)
        if m:
            body = re.sub(r"//[^\n]*", "", m.group(1))
            return [e.split("=")[0].strip() for e in body.split(",") if e.strip()]
    return []


# ---- docs/errors.md ------------------------------------------------------------------------------

def table_rows(text: str) -> list[list[str]]:
    """Markdown table rows, as lists of stripped cells."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.lstrip().startswith("|")]


def rows_starting_with(word: str) -> list[list[str]]:
    return [r for r in table_rows(ERRORS.read_text(encoding="utf-8")) if r and r[0] == f"`{word}`"]


def test_every_cpp_error_kind_has_a_row_in_errors_md():
    kinds = error_kinds()
    enumerators = enum_enumerators("ErrorKind")
    assert enumerators, "enum class ErrorKind not found under cpp/"
    unnamed = [e for e in enumerators if e not in kinds]
    assert not unnamed, f"ErrorKind enumerators with no to_string case: {unnamed}"
    undocumented = [w for w in kinds.values() if not rows_starting_with(w)]
    assert not undocumented, ("error kinds with no row `| `kind` | …` in docs/errors.md (add the "
                              f"cause, remedy and exit code): {undocumented}")
    text = ERRORS.read_text(encoding="utf-8")
    missing_enum = [e for e in enumerators if f"`{e}`" not in text]
    assert not missing_enum, f"ErrorKind enumerators not named in docs/errors.md: {missing_enum}"


def python_status_words() -> dict[str, str]:
    """{constant: word} of every string constant in python/etproof/status.py."""
    tree = ast.parse((REPO / "python" / "etproof" / "status.py").read_text(encoding="utf-8"))
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def python_error_classes() -> dict[str, str]:
    """{class name: kind} of every exception class in python/etproof/errors.py (kind inherited;
    a kind may be a string or a constant of python/etproof/status.py)."""
    tree = ast.parse((REPO / "python" / "etproof" / "errors.py").read_text(encoding="utf-8"))
    words = python_status_words()
    own: dict[str, str | None] = {}
    base: dict[str, str | None] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        first = node.bases[0] if node.bases else None
        base[node.name] = first.id if isinstance(first, ast.Name) else None
        own[node.name] = next((stmt.value.value if isinstance(stmt.value, ast.Constant)
                               else words[stmt.value.id] for stmt in node.body
                               if isinstance(stmt, ast.Assign)
                               and isinstance(stmt.value, (ast.Constant, ast.Name))
                               and any(getattr(t, "id", None) == "kind" for t in stmt.targets)),
                              None)

    def kind(name: str | None) -> str | None:
        while name in own:
            if own[name] is not None:
                return own[name]
            name = base[name]
        return None

    return {name: kind(name) for name in own if kind(name) is not None}


def test_every_python_error_class_and_kind_is_in_errors_md():
    classes = python_error_classes()
    assert {"EtproofError", "ExportError", "ManifestError", "InvalidArgument"} <= set(classes), (
        f"python/etproof/errors.py's classes read as {classes}")
    problems = []
    for name, kind in classes.items():
        rows = rows_starting_with(name)
        if not rows:
            problems.append(f"{name}: no row `| `{name}` | …` in docs/errors.md")
        elif not any(f"`{kind}`" in r[1] for r in rows if len(r) > 1):
            problems.append(f"{name}: its row does not give its kind `{kind}`")
    assert not problems, "\n".join(problems)


def test_every_status_word_has_a_row_saying_whether_it_fails_the_run():
    words = status_words()
    fails = fails_run()
    problems = []
    for enumerator, word in words:
        rows = [r for r in rows_starting_with(word) if len(r) >= 3]
        verdicts = {r[-1].replace("*", "").strip().split()[0].rstrip(",").lower() for r in rows
                    if r[-1].replace("*", "").strip()}
        verdicts &= {"yes", "no"}
        if not verdicts:
            problems.append(f"{word}: no row `| `{word}` | meaning | yes/no |` in docs/errors.md")
        elif enumerator in fails and verdicts != {"yes" if fails[enumerator] else "no"}:
            problems.append(f"{word}: docs/errors.md says fails the run = {sorted(verdicts)}, "
                            f"fails_run says {fails[enumerator]}")
    assert not problems, "\n".join(problems)
    named = {enumerator for enumerator, _word in words}
    assert set(fails) <= named, (
        f"fails_run names enumerators without a status word: {sorted(set(fails) - named)}")


# ---- links and paths ----------------------------------------------------------------------------

TOP_DIRS = ("cpp/", "python/", "data/", "docs/", "tests/", "evidence/", "scripts/", "examples/",
            "cmake/")


def test_links_and_repository_paths_in_the_docs_exist():
    missing = []
    for doc in (DESIGN, ERRORS):
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" not in target and not (doc.parent / target).exists():
                missing.append(f"{doc.name}: link {target}")
        for path in re.findall(r"`([\w./-]+)`", text):
            if path.startswith(TOP_DIRS) and not (REPO / path).exists():
                missing.append(f"{doc.name}: `{path}`")
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_every_relative_link_in_the_readme_and_docs_resolves():
    """Every ](target) of README.md and docs/*.md that is not a URL names a file that exists
    relative to the document, and an #anchor into Markdown names one of its headings."""
    bad, checked = [], 0
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://|mailto:", target):
                continue
            checked += 1
            path, _, frag = target.partition("#")
            dest = (doc.parent / path) if path else doc
            if not dest.exists():
                bad.append(f"{doc.relative_to(REPO)}: {target} (no such path)")
            elif frag and dest.suffix == ".md" and frag not in _anchors(dest):
                bad.append(f"{doc.relative_to(REPO)}: {target} (no heading #{frag})")
    assert checked > 20, checked
    assert bad == [], bad


def test_the_export_halfs_status_words_are_the_ones_errors_md_lists():
    """docs/errors.md, "The other status words", names export-report.json's and the export
    probe's words; python/etproof/status.py spells each once."""
    words = python_status_words()
    text = ERRORS.read_text(encoding="utf-8")
    for line_start, names in (("- `export-report.json` entries", "EXPORT_STATUSES"),
                              ("- The export probe", "PROBE_STATUSES")):
        line = next(x for x in text.splitlines() if x.startswith(line_start))
        documented = re.findall(r"`([a-z-]+)`", line.rsplit("): ", 1)[1])
        tree = ast.parse((REPO / "python" / "etproof" / "status.py").read_text(encoding="utf-8"))
        tup = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                   and any(getattr(t, "id", None) == names for t in n.targets))
        assert documented == [words[e.id] for e in tup.elts], (line, names)
