#!/usr/bin/env bash
# Docs check: every pointer in the repository's docs and comments resolves.
#
# Fails (exit 1, one "file:line: ..." line per problem) on
#   (a) a Markdown link [text](target) in a *.md file to a repository file
#       or directory that does not exist;
#   (b) a repository path (src/…, tests/…, docs/…, services/…, layers/…,
#       benches/…, scripts/…, examples/…, contrib/…, fuzz/…) named in
#       backticks in a *.md file or in a // comment of a *.rs file, or named
#       bare with a file extension there, that does not exist (globs and
#       {a,b} sets must match something; <placeholder> forms are skipped);
#   (c) any reference to the directory beside the repository (dot-dot-slash
#       "shared") or to the two documents that lived there (the spec and the
#       design card, by their file names; docs/protocol.md and
#       docs/architecture.md replace them);
#   (d) a §N or §N.M that has no heading "N." / "N.M" in docs/protocol.md
#       (section numbers in code and docs refer to that file; "RFC 1234 §x"
#       and "HTML §x" name other documents and are skipped).
#
# Usage: bash scripts/check_docs.sh   (from anywhere; needs git and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import glob, os, re, subprocess, sys

ROOTS = ("src", "tests", "docs", "services", "layers", "benches", "scripts",
         "examples", "contrib", "fuzz")
PROTOCOL = "docs/protocol.md"
OUTSIDE = ".." + "/shared"          # spelled apart so this file passes (c)
OUTSIDE_DOCS = re.compile(r"\b(?:SP" r"EC|DES" r"IGN)\.md\b")

files = subprocess.run(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
    check=True, capture_output=True).stdout.decode().split("\0")
files = sorted(f for f in set(files) if f and os.path.isfile(f))
problems = []

def report(path, lineno, what):
    problems.append(f"{path}:{lineno}: {what}")

def read_lines(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().split("\n")
    except (UnicodeDecodeError, OSError):
        return None

# --- (d) the headings of docs/protocol.md -----------------------------------
sections = set()
for line in read_lines(PROTOCOL) or []:
    m = re.match(r"#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", line)
    if m:
        sections.add(m.group(1))
if not sections:
    report(PROTOCOL, 0, "no numbered headings (missing file?)")

SECTION_REF = re.compile(r"§\s?(\d+(?:\.\d+)*)")
FOREIGN = re.compile(r"(RFC\s?\d+|HTML)\s*$")

# --- (b) repository paths ----------------------------------------------------
ROOT_ALT = "|".join(ROOTS)
# a path-like token starting at a root: no spaces, no backticks
PATH_TOKEN = re.compile(r"(?<![\w./<>{}*-])((?:%s)/[\w./*?{},\[\]<>-]*)" % ROOT_ALT)
BARE_FILE = re.compile(
    r"(?<![\w./<>{}*`-])((?:%s)/[\w./-]*\.(?:rs|md|sh|py|toml|service|socket|lock|transcript))\b"
    % ROOT_ALT)
BACKTICK = re.compile(r"`([^`\n]+)`")

def expand_braces(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(p[:m.start()] + alt.strip() + p[m.end():])
    return out

def path_exists(p):
    """True when p (a repository path, maybe a glob or {a,b} set) names something."""
    p = re.sub(r":\d+(?:[-:]\d+)*$", "", p)      # file.rs:12
    p = p.rstrip(".,;:)")                         # prose punctuation
    if "<" in p or ">" in p or "…" in p:          # <placeholder>, elided
        return True
    if p.endswith("/..."):
        p = p[:-4]
    for q in expand_braces(p):
        if any(c in q for c in "*?["):
            if not glob.glob(q, recursive=True):
                return False
        elif not os.path.exists(q.rstrip("/") or "."):
            return False
    return True

def check_paths(path, lineno, text, bare):
    seen = set()
    for span in BACKTICK.findall(text):
        for m in PATH_TOKEN.finditer(span):
            seen.add(m.group(1))
    if bare:
        for m in BARE_FILE.finditer(BACKTICK.sub(" ", text)):
            seen.add(m.group(1))
    for p in sorted(seen):
        if not path_exists(p):
            report(path, lineno, f"names {p}, which does not exist")

# --- (a) Markdown links --------------------------------------------------------
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")

def check_links(path, lineno, text):
    base = os.path.dirname(path)
    for target in LINK.findall(BACKTICK.sub(" ", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue                                  # URL, mailto:, anchor
        t = target.split("#", 1)[0]
        if not t:
            continue
        full = os.path.normpath(os.path.join(base, t))
        if full.startswith(".."):
            report(path, lineno, f"link to {target} leaves the repository")
        elif not os.path.exists(full):
            report(path, lineno, f"link to {target}: {full} does not exist")

def rust_comment(line):
    s = line.lstrip()
    if s.startswith("//"):
        return s
    i = line.find(" // ")
    return line[i + 1:] if i >= 0 else None

for f in files:
    if f.startswith("target/"):
        continue
    lines = read_lines(f)
    if lines is None:
        continue
    is_md, is_rs = f.endswith(".md"), f.endswith(".rs")
    in_fence = False
    for n, line in enumerate(lines, 1):
        if OUTSIDE in line:                                         # (c)
            report(f, n, f"points outside the repository ({OUTSIDE})")
        for m in OUTSIDE_DOCS.finditer(line):
            if not os.path.exists(os.path.basename(m.group(0))):
                report(f, n, f"names {m.group(0)}, which is not in the repository")
        for m in SECTION_REF.finditer(line):                         # (d)
            if FOREIGN.search(line[:m.start()]):
                continue
            if m.group(1) not in sections:
                report(f, n, f"§{m.group(1)} has no heading in {PROTOCOL}")
        if not (is_md or is_rs):
            continue
        if is_md:
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            check_links(f, n, line)                                  # (a)
            check_paths(f, n, line, bare=True)                       # (b)
        else:
            c = rust_comment(line)
            if c is not None:
                check_paths(f, n, c, bare=True)                      # (b)

for p in problems:
    print(p)
if problems:
    print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print(f"check_docs: ok ({len(files)} files, {len(sections)} protocol sections)")
PY
