#!/usr/bin/env python3
"""No function over 80 lines and no file over 700 lines in non-test code (CTest layers.sizes).

Non-test code: the C++ under cpp/ (cpp/src, cpp/include, cpp/cli, cpp/worker, cpp/c_api,
cpp/bench; not cpp/tests) and fuzz/'s harnesses (.cpp, .cc, .h, .hpp), and the Python under
python/ (not python/tests), scripts/ and benchmarks/. A function's lines run from the first line of
its signature to its closing brace (C++) or from its `def` to its last line (Python, every `def`,
methods and nested ones too); a file's lines are its newline-terminated lines.

Python functions are read with `ast`. C++ functions are found by a brace matcher over the source
with its comments, string and character literals and preprocessor lines blanked out: a `{` at
namespace or class scope whose signature (the text since the previous `;`, `{` or `}` there)
holds a parameter list is a function body, and the function ends at its matching `}`; namespace,
class, struct, union, enum and `extern "C"` braces are scopes, anything else (an initializer) is
no function. Braces in a constructor's member-initializer list (`x_{a}`) belong to its signature.

ALLOWED names the functions (PATH:NAME) and files (PATH) over the limit that work in progress
elsewhere is rewriting; each is reported once it no longer exceeds the limit, so the list only
shrinks.

    check_sizes.py ROOT          exit 0, or 1 listing every function and file over its limit
    check_sizes.py --self-test   plants a long C++ function, a long Python one and a long file in a
                                 small tree (beside short ones, braces in strings and comments);
                                 exit 0 iff exactly those are caught
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 700

CPP_SUFFIXES = (".cpp", ".cc", ".h", ".hpp")
CPP_ROOTS = ("cpp", "fuzz")
CPP_EXCLUDED = ("cpp/tests",)
PY_ROOTS = ("python", "scripts", "benchmarks")
PY_EXCLUDED = ("python/tests",)

# Functions and files over the limit that other work is rewriting now (the render layer's
# renderers, the runtime's load path): each is split there, then removed here.
ALLOWED = {
    "cpp/src/runtime/loaded_model.cpp",
    "cpp/src/runtime/loaded_model.cpp:LoadedModel::load",
    "cpp/src/runtime/loaded_model.cpp:LoadedModel::run",
    "cpp/src/render/render_matrix.cpp:to_json",
    "cpp/src/render/render_matrix.cpp:to_markdown",
    "cpp/src/render/render_matrix.cpp:to_text_grouped",
    "cpp/src/render/render_matrix.cpp:to_text",
    "cpp/src/render/render_parity.cpp:to_text",
    "cpp/src/render/render_matrix_html.cpp:to_html",
    "cpp/src/render/render_junit.cpp:to_junit",
    "cpp/src/render/render_tolerances.cpp:to_json",
}

SCOPE_KEYWORDS = re.compile(r"(?:inline\s+)?(?:namespace|class|struct|union|enum)\b")
EXTERN_C = re.compile(r'extern\s*""\s*$')
ACCESS = re.compile(r"^(?:(?:public|private|protected)\s*:(?!:)\s*)+")


def source_files(root: Path) -> list[str]:
    """Tracked and untracked-not-ignored files, relative to root (every file where git is absent)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    return sorted(f for f in files if (root / f).is_file())


def under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


def literal_end(text: str, i: int) -> int:
    """Just past the string or character literal opened by the quote at i (its escapes skipped);
    an unterminated one ends at the end of its line."""
    j = i + 1
    while j < len(text) and text[j] != text[i] and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def blank_cpp(text: str) -> str:
    """The source with comments, string and character literals and preprocessor lines replaced
    by spaces (newlines kept, so offsets and line numbers stay)."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"':
            raw = re.search(r"(?:^|[^A-Za-z0-9_])(?:u8|u|U|L)?R$", text[max(0, i - 4):i])
            if raw:
                m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
                end = text.find(")" + m.group(1) + '"', i) if m else -1
                j = n if end < 0 else end + len(m.group(1)) + 2
            else:
                j = literal_end(text, i)
            blank(i + 1, j - 1)
            i = j
        elif c == "'":
            # A digit separator (1'000'000) is no literal: the quote sits inside a number.
            k = i - 1
            while k >= 0 and (text[k].isalnum() or text[k] in "_.'"):
                k -= 1
            if k + 1 < i and text[k + 1].isdigit():
                i += 1
                continue
            j = literal_end(text, i)
            blank(i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(out)


def first_paren_group_end(h: str) -> int:
    """The index just past the first balanced (...) of h; -1 when it has none."""
    start = h.find("(")
    if start < 0:
        return -1
    depth = 0
    for k in range(start, len(h)):
        if h[k] == "(":
            depth += 1
        elif h[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def function_name(h: str) -> str:
    """The name before the parameter list: "LoadedModel::load", "operator==", "to_text"."""
    op = re.search(r"(operator\s*(?:\(\)|[^\s(]+))\s*\(", h)
    if op:
        return re.sub(r"\s+", "", op.group(1))
    names = re.findall(r"[~\w:]+", h[:h.find("(")])
    return names[-1].lstrip(":") if names else "?"


def classify(header: str) -> str:
    """What a `{` opens at namespace or class scope, from the text before it since the previous
    `;`, `{` or `}`: "scope", "function", "init" (a brace in a member-initializer list) or "other"."""
    h = ACCESS.sub("", header.strip())
    h = re.sub(r"\[\[.*?\]\]", " ", h).strip()
    h = re.sub(r"^template\s*<.*?>\s*(?=[A-Za-z_])", "", h, flags=re.S)
    if EXTERN_C.match(h) or (SCOPE_KEYWORDS.match(h) and "(" not in h):
        return "scope"
    end = first_paren_group_end(h)
    if end < 0:
        return "other"
    before = h[:h.find("(")]
    if "=" in before and "operator" not in before:
        return "other"  # an initializer: `auto f = [](…) {`, `T x = f(…) {`
    tail = h[end:]
    if re.match(r"\s*:(?!:)", tail) and re.search(r"[\w>]\s*$", h):
        return "init"
    return "function"


def cpp_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, line count) of each function body at namespace or class scope."""
    s = blank_cpp(text)
    line_of = [0] * (len(s) + 1)
    line = 1
    for k, ch in enumerate(s):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(s)] = line
    found = []
    stack: list[tuple[str, int, str]] = []  # kind, header start offset, name
    header_start = 0
    in_function = 0  # depth inside the outermost function body; 0: at scope level
    for k, ch in enumerate(s):
        if ch not in "{};":
            continue
        if in_function:
            if ch == "{":
                in_function += 1
            elif ch == "}":
                in_function -= 1
                if in_function == 0:
                    _, start, name = stack.pop()
                    found.append((name, line_of[start], line_of[k] - line_of[start] + 1))
                    header_start = k + 1
            continue
        if ch == ";":
            header_start = k + 1
            continue
        if ch == "{":
            header = s[header_start:k]
            kind = "init" if stack and stack[-1][0] == "init" else classify(header)
            start = header_start
            while start < k and s[start].isspace():
                start += 1
            if m := ACCESS.match(s, start, k):
                start = m.end()
            if kind == "function":
                stack.append((kind, start, function_name(header.strip())))
                in_function = 1
                continue
            stack.append((kind, start, ""))
            if kind != "init":
                header_start = k + 1
            continue
        # "}" at scope level
        kind = stack.pop()[0] if stack else "scope"
        if kind != "init":
            header_start = k + 1
    return found


def py_functions(text: str, path: str) -> list[tuple[str, int, int]]:
    tree = ast.parse(text, filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, node.lineno, node.end_lineno - node.lineno + 1))
    return sorted(found, key=lambda f: f[1])


def check(root: Path, allowed: set[str] = ALLOWED) -> list[str]:
    problems = []
    seen_allowed = set()
    for f in source_files(root):
        is_cpp = f.endswith(CPP_SUFFIXES) and under(f, CPP_ROOTS) and not under(f, CPP_EXCLUDED)
        is_py = f.endswith(".py") and under(f, PY_ROOTS) and not under(f, PY_EXCLUDED)
        if not (is_cpp or is_py):
            continue
        text = (root / f).read_text(encoding="utf-8", errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES and f in allowed:
            seen_allowed.add(f)
        elif lines > MAX_FILE_LINES:
            problems.append(f"{f}: {lines} lines (limit {MAX_FILE_LINES}): split it by concern")
        for name, first, count in (cpp_functions(text) if is_cpp else py_functions(text, f)):
            if count <= MAX_FUNCTION_LINES:
                continue
            if f"{f}:{name}" in allowed:
                seen_allowed.add(f"{f}:{name}")
                continue
            problems.append(f"{f}:{first}: function {name} is {count} lines (limit {MAX_FUNCTION_LINES}): "
                            f"split it by the jobs it does")
    for a in sorted(allowed - seen_allowed):
        problems.append(f"{a}: allowed over the limit in check_sizes.py's ALLOWED, but no longer over it "
                        f"(or gone): remove it from ALLOWED")
    return problems


def self_test() -> int:
    body = "".join(f"  x += {i};\n" for i in range(85))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cpp/src/core").mkdir(parents=True)
        (root / "cpp/tests").mkdir(parents=True)
        (root / "python/etproof").mkdir(parents=True)
        (root / "python/tests").mkdir(parents=True)
        (root / "cpp/src/core/a.cpp").write_text(
            '#include <string>\n#define OPEN {\nnamespace etproof {\nnamespace {\n'
            'const char* kBrace = "}}{";  // a } in a comment\nconst char kOpen = \'{\';\n'
            '/* { */\nint short_one(int x) {\n  return x + 1\'000;\n}\n}  // namespace\n\n'
            'struct Holder {\n  Holder(int a) : a_{a}, b_(a) {\n' + body + '  }\n  int a_, b_;\n};\n\n'
            'int Widget::long_one(int x) const {\n' + body + '  return x;\n}\n'
            'const char* kRaw = R"x(} { })x";\n}  // namespace etproof\n')
        (root / "cpp/tests/a_test.cpp").write_text("void t() {\n" + body + "}\n")
        (root / "python/etproof/m.py").write_text(
            "def short():\n    return 1\n\n\ndef long_py():\n" + "".join(f"    x = {i}\n" for i in range(85)))
        (root / "python/tests/test_m.py").write_text("def test_long():\n" + "    x = 1\n" * 90)
        (root / "cpp/src/core/big.h").write_text("// line\n" * 701)
        found = check(root, allowed={"cpp/src/core/a.cpp:Holder::gone"})
        want = [
            "cpp/src/core/a.cpp:14: function Holder is 87 lines",
            "cpp/src/core/a.cpp:104: function Widget::long_one is 88 lines",
            "cpp/src/core/big.h: 701 lines",
            "python/etproof/m.py:5: function long_py is 86 lines",
            "cpp/src/core/a.cpp:Holder::gone: allowed over the limit",
        ]
        ok = len(found) == len(want) and all(any(p.startswith(w) for p in found) for w in want)
        print("self-test:", "ok" if ok else "FAILED:\n  " + "\n  ".join(found))
        return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(argv[1]).resolve())
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else
          f"sizes: no function over {MAX_FUNCTION_LINES} lines, no file over {MAX_FILE_LINES}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
