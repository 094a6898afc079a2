#!/usr/bin/env python3
"""CTest driver for `etproof matrix --html` in a real browser (CMakeLists.txt, test
matrix_html.renders_in_chromium). Python 3 stdlib only.

  check_matrix_html.py ETPROOF BUNDLES SCRATCH

Writes the page of two matrices with `etproof matrix --json --html` — BUNDLES itself (the test
bundles) and SCRATCH/hostile (one of its bundles beside an export report whose refused column
carries markup in its backend, model and reason) — loads each in headless Chromium
(`--dump-dom`), and checks that:
  - the browser logged no console message and no uncaught error (the page has no script; a
    message would be a broken page or a blocked load), a probe page with a console.error proving
    the check sees them;
  - the rendered DOM holds every cell of the matrix `--json` reports, with its status word shown,
    and every not-run line with its status — compared against the JSON of the same run, not
    against counts written here;
  - the verdict's exit status is the JSON's;
  - the hostile text is text: no element the page did not make, the markup visible as characters;
  - a matrix of bundles with tapped twins (BUNDLES/attribution: the GELU MLP) shows "Which layer
    drifted" with one img.attribution whose data: URI decodes to an SVG document (base64 and XML
    parsed here by the standard library), and still no console line.

Exit 0 when all hold, 1 when not, 77 (CTest SKIP_RETURN_CODE), with the reason, when the etproof
binary, Chromium (Debian's `chromium`; setup.sh --fuzz installs it) or the test bundles are
missing.
"""
import base64
import collections
import html.parser
import xml.etree.ElementTree as ElementTree
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
HOSTILE_REPORT = {"results": [
    {"backend": "<script>alert('b')</script>", "recipe": "fp32", "status": "export-refused",
     "model": "<img src=x onerror=alert(1)>", "reason": "<script>alert('r')</script> & \"quoted\""},
]}


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def console_lines(stderr):
    """Chromium's log lines for console messages and uncaught errors (the rest is its noise:
    D-Bus, GPU probing in a container)."""
    return [line for line in stderr.splitlines()
            if ":CONSOLE" in line or "Uncaught" in line or "net::ERR_" in line]


def load(browser, page, profile):
    """The DOM Chromium built from `page`, and its console lines."""
    cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={profile}", "--dump-dom", "file://" + os.path.abspath(page)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or "<html" not in r.stdout:
        raise SystemExit(f"chromium failed on {page} (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout, console_lines(r.stderr)


class Dom(html.parser.HTMLParser):
    """The cells (td.cell), not-run rows (tr.not-run-row), the verdict, every element name and the
    page's text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells, self.not_run, self.tags, self.text = [], [], collections.Counter(), []
        self.exit_code = None
        self.images = []        # src of every img.attribution
        self._cell = None       # the open td.cell's record
        self._in_word = False   # inside its summary's status word

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        classes = (a.get("class") or "").split()
        if tag == "td" and "cell" in classes:
            self._cell = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
            self._cell["shown"] = ""
            self.cells.append(self._cell)
        elif tag == "span" and "word" in classes and self._cell is not None and not self._cell["shown"]:
            self._in_word = True
        elif tag == "tr" and "not-run-row" in classes:
            self.not_run.append(a.get("data-status"))
        elif a.get("id") == "verdict":
            self.exit_code = int(a["data-exit-code"])
        elif tag == "img" and "attribution" in classes:
            self.images.append(a.get("src") or "")

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        if tag == "span":
            self._in_word = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_word:
            self._cell["shown"] += data


def check_page(etproof, browser, bundles, out, profile):
    """Renders the matrix of `bundles` to `out` and checks it; returns the problems found."""
    r = subprocess.run([etproof, "matrix", "--json", bundles, "--html", out], capture_output=True, text=True,
                       timeout=900)
    if r.returncode not in (0, 1):
        return [f"etproof matrix {bundles} exited {r.returncode}:\n{r.stderr}"], Dom()
    doc = json.loads(r.stdout)
    dom_text, console = load(browser, out, profile)
    dom = Dom()
    dom.feed(dom_text)
    problems = [f"console: {line}" for line in console]
    want = collections.Counter((c["dir"], c["bundle"], c["case"], c["status"]) for c in doc["cells"])
    got = collections.Counter((c.get("dir"), c.get("bundle"), c.get("case"), c.get("status")) for c in dom.cells)
    if got != want:
        problems.append(f"cells differ from --json: missing {sorted((want - got).elements())}, "
                        f"extra {sorted((got - want).elements())}")
    for c in dom.cells:
        if c["shown"] != c.get("status"):
            problems.append(f"cell {c} shows {c['shown']!r}, not its status")
    if collections.Counter(dom.not_run) != collections.Counter(n["status"] for n in doc["not_run"]):
        problems.append(f"not-run rows {dom.not_run} differ from --json's {doc['not_run']}")
    text = "".join(dom.text)
    for n in doc["not_run"]:
        if n["reason"] not in text:
            problems.append(f"not-run reason not shown: {n['reason']!r}")
    if dom.exit_code != doc["exit_code"]:
        problems.append(f"the page's exit status {dom.exit_code} is not --json's {doc['exit_code']}")
    if dom.exit_code != r.returncode:
        problems.append(f"the page's exit status {dom.exit_code} is not the command's {r.returncode}")
    print(f"{out}: {len(dom.cells)} cells, {len(dom.not_run)} not-run rows, exit status {dom.exit_code}, "
          f"{len(console)} console line(s)")
    return problems, dom


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__)
    etproof, bundles, scratch = argv[1:]
    if not os.access(etproof, os.X_OK):
        skip(f"no etproof binary at {etproof} (build it: cmake --build build)")
    browser = find_browser()
    if not browser:
        skip("no Chromium on PATH (Debian: apt-get install --no-install-recommends chromium; "
             "./setup.sh --fuzz installs it)")
    portable = os.path.join(bundles, "tiny-portable-fp32")
    if not os.path.isdir(portable):
        skip(f"test bundles not exported: {portable} (./test.sh exports them)")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=scratch)
    problems = []

    # The console check sees a page's console messages and errors.
    probe = os.path.join(scratch, "probe.html")
    with open(probe, "w") as f:
        f.write('<!DOCTYPE html><html><body><script>console.error("probe"); no_such_fn();</script></body></html>')
    _, console = load(browser, probe, profile)
    if not any("probe" in line for line in console) or not any("Uncaught" in line for line in console):
        problems.append(f"the console check saw nothing on the probe page: {console}")

    found, _ = check_page(etproof, browser, bundles, os.path.join(scratch, "test-bundles.html"), profile)
    problems += found

    hostile = os.path.join(scratch, "hostile")
    shutil.copytree(portable, os.path.join(hostile, "tiny-portable-fp32"))
    with open(os.path.join(hostile, "export-report.json"), "w") as f:
        json.dump(HOSTILE_REPORT, f)
    found, dom = check_page(etproof, browser, hostile, os.path.join(scratch, "hostile.html"), profile)
    problems += found
    if dom.tags["script"] or dom.tags["img"]:
        problems.append(f"hostile text became elements: {dict(dom.tags)}")
    text = "".join(dom.text)
    for shown in ("<script>alert('b')</script>", "<img src=x onerror=alert(1)>",
                  "<script>alert('r')</script> & \"quoted\""):
        if shown not in text:
            problems.append(f"hostile text not shown as text: {shown!r}")

    attribution = os.path.join(bundles, "attribution")
    if os.path.isdir(attribution):
        found, dom = check_page(etproof, browser, attribution, os.path.join(scratch, "attribution.html"),
                                profile)
        problems += found
        if "Which layer drifted" not in "".join(dom.text) or len(dom.images) != 1:
            problems.append(f"the attribution page shows {len(dom.images)} img.attribution, want 1 with "
                            "'Which layer drifted'")
        for src in dom.images:
            prefix = "data:image/svg+xml;base64,"
            try:
                root = ElementTree.fromstring(base64.b64decode(src[len(prefix):], validate=True))
                if not src.startswith(prefix) or not root.tag.endswith("svg"):
                    raise ValueError(f"root element {root.tag}")
            except (ValueError, ElementTree.ParseError) as e:
                problems.append(f"img.attribution is not an SVG data: URI ({e}): {src[:80]}")
    else:
        print(f"no {attribution}: the attribution page is not checked")

    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
