"""Every file path and docs heading the repository cites exists.

Scans Markdown, Rust, Python, shell and TOML files for `bench/…`, `scripts/…` and `docs/….md`
paths and for `docs/<page>.md "Heading"` citations; prints each one that points nowhere and exits 1
if any does. Run from anywhere: `python3 scripts/check_references.py`.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCANNED = {".md", ".rs", ".py", ".sh", ".toml"}
SKIP_DIRS = {"target", ".git", "node_modules", "__pycache__"}
PATH_RE = re.compile(r"(?<![\w./-])((?:bench|scripts|docs)/[\w./-]*[\w])")
HEADING_RE = re.compile(r"((?:docs/[\w-]+|README)(?:\.md)?)[\"'`]?,? \(?\"([^\"]+)\"")
# Comment markers a quoted heading may run across when a comment wraps it.
WRAP_RE = re.compile(r"\s*\n\s*(?://[/!]?|#)?\s*")
# A link inside a docs page: [text](page.md#anchor) or (page.md).
LINK_RE = re.compile(r"\]\(([\w./-]+\.md)(?:#[\w-]*)?\)")


def files():
    for p in ROOT.rglob("*"):
        if p.is_file() and p.suffix in SCANNED and not SKIP_DIRS & set(p.parts):
            yield p
    run = ROOT / ".ci" / "run"
    if run.exists():
        yield run


def headings(page):
    text = page.read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"(?m)^#+ +(.+?) *$", text)}


def problems():
    for f in files():
        rel = f.relative_to(ROOT)
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in PATH_RE.finditer(text):
            cited = m.group(1).rstrip(".")
            if "*" in cited or cited.endswith("/"):
                continue
            if not (ROOT / cited).exists():
                yield f"{rel}: cites {cited}, which does not exist"
        for m in HEADING_RE.finditer(text):
            name = m.group(1) if m.group(1).endswith(".md") else m.group(1) + ".md"
            page, heading = ROOT / name, WRAP_RE.sub(" ", m.group(2)).strip()
            if not page.exists():
                yield f"{rel}: cites {name}, which does not exist"
            elif not any(h.startswith(heading) for h in headings(page)):
                yield f'{rel}: cites {name} "{heading}", which has no such heading'
        if f.suffix == ".md":
            for m in LINK_RE.finditer(text):
                target = (f.parent / m.group(1)).resolve()
                if not target.exists():
                    yield f"{rel}: links {m.group(1)}, which does not exist"


def main():
    found = sorted(set(problems()))
    for line in found:
        print(line)
    print(f"{len(found)} broken references")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
