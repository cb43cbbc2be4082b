#!/usr/bin/env python3
"""Citations and maps: every document, section and repository file that the
code's comments and the docs name must exist.

    tests/citations.py [--root DIR] [--no-self-test]

Checks (each one test in the RESULT line):
  doc-citation   "docs/<page>.md §N" (also §N-M, §N, §M) in comments, docs
                 and schema descriptions: the page exists and has a heading
                 numbered N; in docs/*.md also "<page>.md §N" relative to the
                 page, a bare
                 "§N" (the page's own section) and markdown links to local
                 files (with their #anchor, GitHub's heading slug)
  repo-path      a path that starts with one of the repository's top folders
                 (sim/cost.c, tests/e2e.sh, ...) in comments and docs exists;
                 another project's path is written with its owner
                 ("NeMo-RL's tests/unit/x.py", "Megatron-LM:docs/x.md")
  file-name      a bare source name in comments and docs (stack.h, kern_cpu.c)
                 whose prefix is one of ours names a file that exists: the maps
                 of sim/sim.h and kernels/kern.h are lists of such names
  rule-families  the code families the header of rules.def lists are
                 exactly those of its RULE rows
  no-private-ref no comment or doc cites what is not in the repository: the
                 design notes kept outside it (the old design file, a bare
                 call-table or notes path), the numbered source documents, a
                 tracker's issue or PR number without its project
Then a self-check injects one broken citation of each kind into a temporary
copy and requires the matching check to fail, and the unbroken copy to pass.
The last line is "RESULT <passed> <failed> <skipped>".
"""
import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize

SKIP_DIRS = {".git", "build", ".gpu", "node_modules", "__pycache__"}
# Outputs compared byte for byte, and the model catalog (data, not prose).
SKIP_PREFIXES = ("tests/golden/", "data/")
SOURCE_EXT = (".c", ".h", ".cu", ".def")
HASH_COMMENT_EXT = (".sh", ".yaml", ".yml", ".txt")
PATH_EXT = r"(?:c|h|cu|def|md|sh|py|json|yaml|txt|svg)"


def walk(root):
    """The files to check: git's tracked and unignored files in a checkout,
    else every file under root but SKIP_DIRS."""
    if os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(
            os.path.join(root, ".git")):
        try:
            got = subprocess.run(["git", "-C", root, "ls-files", "--cached",
                                  "--others", "--exclude-standard"],
                                 capture_output=True, text=True, check=True)
            return sorted(f for f in set(got.stdout.splitlines())
                          if os.path.isfile(os.path.join(root, f)) and
                          (not f.startswith(SKIP_PREFIXES) or
                           f == "tests/golden/README.md"))
        except (OSError, subprocess.CalledProcessError):
            pass
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(d, f), root)
            rel = rel.replace(os.sep, "/")
            if rel.startswith(SKIP_PREFIXES) and rel != "tests/golden/README.md":
                continue
            out.append(rel)
    return out


# ---- text extraction: (line, text) pieces --------------------------------

def c_comments(src):
    """Comments of C/C++ source, skipping string and char literals."""
    out, i, n, line = [], 0, len(src), 1
    while i < n:
        ch = src[i]
        if ch == "\n":
            line += 1
            i += 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((line, src[i:j]))
            line += src.count("\n", i, j)
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append((line, src[i:j]))
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and src[j] != ch and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def py_comments(src):
    out = []
    try:
        toks = tokenize.generate_tokens(io.StringIO(src).readline)
        for t in toks:
            if t.type == tokenize.COMMENT:
                out.append((t.start[0], t.string))
            elif t.type == tokenize.STRING and t.string.lstrip(
                    "rbuRBU").startswith(('"""', "'''")):
                out.append((t.start[0], t.string))
    except (tokenize.TokenError, SyntaxError):
        return hash_comments(src)
    return out


def hash_comments(src):
    out = []
    for no, ln in enumerate(src.split("\n"), 1):
        for m in re.finditer(r"(?:^|(?<=\s))#", ln):
            before = ln[:m.start()]
            if before.count('"') % 2 or before.count("'") % 2:
                continue
            out.append((no, ln[m.start():]))
            break
    return out


def pieces(rel, src):
    """(kind, [(line, text)]): kind is 'doc' (all text counts), 'comment'
    (only comments count) or 'data' (only doc citations count)."""
    base = os.path.basename(rel)
    if rel.endswith(".md"):
        return "doc", [(1, src)]
    if rel.endswith(SOURCE_EXT):
        return "comment", c_comments(src)
    if rel.endswith(".py"):
        return "comment", py_comments(src)
    if rel.endswith(HASH_COMMENT_EXT) or base == "Makefile":
        return "comment", hash_comments(src)
    if rel.endswith(".json"):
        return "data", [(1, src)]
    return None, []


def line_of(text, start, pos):
    return start + text.count("\n", 0, pos)


# ---- sections and anchors ------------------------------------------------

HEADING = re.compile(r"^(#+)\s+(.*?)\s*$", re.M)


def headings(path):
    """(section numbers, anchors) of a markdown file."""
    nums, anchors = set(), set()
    try:
        src = open(path, encoding="utf-8").read()
    except OSError:
        return None
    src = re.sub(r"^```.*?^```", "", src, flags=re.M | re.S)
    for m in HEADING.finditer(src):
        title = m.group(2)
        num = re.match(r"(\d+(?:\.\d+)*)\.?(?:\s|$)", title)
        if num:
            nums.add(num.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        anchors.add(slug)
    return nums, anchors


SECTION_LIST = (r"§\s*\d+(?:\.\d+)*(?:\s*-\s*\d+(?:\.\d+)*)?"
                r"(?:\s*(?:,|and)\s*§?\s*\d+(?:\.\d+)*"
                r"(?:\s*-\s*\d+(?:\.\d+)*)?)*")


def section_numbers(text):
    return re.findall(r"\d+(?:\.\d+)*", text)


class Checker:
    def __init__(self, root):
        self.root = root
        self.files = walk(root)
        self.problems = []
        self.heads = {}
        tops = {f.split("/")[0] for f in self.files if "/" in f}
        self.top_re = "|".join(sorted(re.escape(t) for t in tops))
        self.basenames = {os.path.basename(f) for f in self.files}
        self.prefixes = {os.path.basename(f).split(".")[0].split("_")[0]
                         for f in self.files if f.endswith(SOURCE_EXT)}

    def add(self, check, rel, line, msg):
        self.problems.append((check, rel, line, msg))

    def exists(self, rel):
        return os.path.exists(os.path.join(self.root, rel))

    def heads_of(self, rel):
        if rel not in self.heads:
            self.heads[rel] = headings(os.path.join(self.root, rel))
        return self.heads[rel]

    # -- doc-citation
    def cite(self, rel, line, target, sections):
        if not self.exists(target):
            self.add("doc-citation", rel, line, "names %s, which does not "
                     "exist" % target)
            return
        if not sections:
            return
        h = self.heads_of(target)
        for s in section_numbers(sections):
            if h is None or s not in h[0]:
                self.add("doc-citation", rel, line, "cites %s §%s, which "
                         "has no such section" % (target, s))

    def doc_citations(self, rel, kind, start, text):
        here = os.path.dirname(rel)
        pat = re.compile(r"(?<![\w/.:-])(?<!'s )(?<!'s\n)((?:\.\./)*[\w./-]*?[\w-]+\.md)"
                         r"(?:\s*(" + SECTION_LIST + "))?")
        for m in pat.finditer(text):
            name, secs = m.group(1), m.group(2)
            ln = line_of(text, start, m.start())
            if name.startswith("docs/"):
                self.cite(rel, ln, os.path.normpath(name), secs)
            elif kind == "doc" and rel.startswith("docs/") and (
                    secs or name.startswith("../") or "/" not in name):
                target = os.path.normpath(os.path.join(here, name))
                if secs or self.exists(target):
                    self.cite(rel, ln, target, secs)
        if kind != "doc":
            return
        for m in re.finditer(r"(?<![\w.\]])(?<!\.md )(?<!\.md)(" +
                             SECTION_LIST + ")", text):
            prev = text[max(0, m.start() - 40):m.start()]
            if re.search(r"\.md\s*$|\]\($|paper\s*$", prev):
                continue
            self.cite(rel, line_of(text, start, m.start()), rel, m.group(1))
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            dest = m.group(1)
            if re.match(r"[a-z]+:", dest):
                continue
            path, _, anchor = dest.partition("#")
            target = os.path.normpath(os.path.join(here, path)) if path \
                else rel
            ln = line_of(text, start, m.start())
            if not self.exists(target):
                self.add("doc-citation", rel, ln, "links to %s, which does "
                         "not exist" % dest)
            elif anchor and target.endswith(".md"):
                h = self.heads_of(target)
                if h is None or anchor not in h[1]:
                    self.add("doc-citation", rel, ln, "links to %s, which "
                             "has no heading with anchor #%s" % (target,
                                                                anchor))

    # -- repo-path and file-name
    def paths(self, rel, start, text):
        pat = re.compile(r"(?<![\w/.:@-])(?<!'s )(?<!'s\n)((?:" + self.top_re +
                         r")/[\w./-]*\w\." + PATH_EXT + r")(?![\w/])")
        for m in pat.finditer(text):
            if not self.exists(m.group(1)):
                self.add("repo-path", rel, line_of(text, start, m.start()),
                         "names %s, which does not exist" % m.group(1))
        for m in re.finditer(r"(?<![\w/.@-])([a-z][a-z0-9_]*\.(?:c|h|cu|def))"
                             r"(?![\w/])", text):
            name = m.group(1)
            if name.split(".")[0].split("_")[0] not in self.prefixes:
                continue
            if name not in self.basenames:
                self.add("file-name", rel, line_of(text, start, m.start()),
                         "names %s, which no file of the repository is" %
                         name)

    # -- no-private-ref
    PROJECT = r"(?:[A-Z][\w.+-]*|[\w.-]+/[\w.-]+)"
    # (pattern, why, also inside docs/: relative names are fine there)
    FORBIDDEN = [
        (r"\bDESIGN\.md\b", "the design is docs/design.md §N", True),
        (r"(?<![\w/.-])calls\.md\b", "cite docs/calls.md", False),
        (r"(?<![\w/.-])notes/\w|\bnotes \d", "cite docs/notes/<page>.md §N",
         False),
        (r"shared/(?:notes|seeds|DESIGN|calls)", "cite docs/, not ../shared",
         True),
        (r"\b[Ss]eeds?(?:\s|\*|#|/)*0\d\d\b|\bSeeds?:|\bseeds?(?:'s|')(?!\w)|"
         r"\bseed scenario", "the source documents are public pages: name "
         "the pull request (docs/design.md §0.1)", True),
    ]

    def private_refs(self, rel, start, text, own_docs):
        for pat, why, in_docs in self.FORBIDDEN:
            if own_docs and not in_docs:
                continue
            for m in re.finditer(pat, text):
                self.add("no-private-ref", rel,
                         line_of(text, start, m.start()),
                         "'%s': %s" % (m.group(0), why))
        for m in re.finditer(r"(\S+)?\s*\b(issues?|PRs?)\s+#?\d+", text):
            owner = (m.group(1) or "").lstrip("([\"'`")
            if not re.fullmatch(self.PROJECT, owner):
                self.add("no-private-ref", rel,
                         line_of(text, start, m.start(2)),
                         "'%s' names no project: write e.g. 'Megatron-LM "
                         "PR #2565'" % m.group(0).strip())
        for m in re.finditer(r"(?<![\w&])#(\d{3,})\b", text):
            prev = text[max(0, m.start() - 60):m.start()]
            if re.search(r"(?:PRs?|[Ii]ssues?|[\w.-]+/[\w.-]+|#\d+[,/]?"
                         r"(?:\s*(?:and|or))?)\s*$", prev):
                continue
            self.add("no-private-ref", rel, line_of(text, start, m.start()),
                     "'#%s' names no project and kind (PR or issue)" %
                     m.group(1))

    # -- rule-families
    def rule_families(self):
        rel = "planner/rules.def"
        path = os.path.join(self.root, rel)
        if not os.path.exists(path):
            hits = [f for f in self.files if f.endswith("/rules.def")]
            if not hits:
                return
            rel, path = hits[0], os.path.join(self.root, hits[0])
        src = open(path, encoding="utf-8").read()
        head = src[:src.find("*/")]
        listed = set(re.findall(r"GT(\d)xx", head))
        used = set(re.findall(r'^RULE\("GT(\d)\d\d"', src, re.M))
        for f in sorted(used - listed):
            self.add("rule-families", rel, 1, "the header's map lacks "
                     "GT%sxx, which RULE rows use" % f)
        for f in sorted(listed - used):
            self.add("rule-families", rel, 1, "the header lists GT%sxx, "
                     "which no RULE row uses" % f)

    def run(self):
        for rel in self.files:
            try:
                src = open(os.path.join(self.root, rel),
                           encoding="utf-8").read()
            except (OSError, UnicodeDecodeError):
                continue
            kind, parts = pieces(rel, src)
            if not kind:
                continue
            own_docs = rel.startswith("docs/")
            for start, text in parts:
                self.doc_citations(rel, kind, start, text)
                if kind == "data":
                    continue
                self.paths(rel, start, text)
                self.private_refs(rel, start, text, own_docs)
        self.rule_families()
        return self.problems


CHECKS = ["doc-citation", "repo-path", "file-name", "rule-families",
          "no-private-ref"]

# One injection per check: (check, file to write or append to, text).
BREAKS = [
    ("doc-citation", "sim/zz_selftest.c",
     "/* the programs: docs/design.md §99.9 */\n"),
    ("doc-citation", "sim/zz_selftest.c", "/* see docs/no-such-page.md */\n"),
    ("doc-citation", "docs/zz_selftest.md",
     "# x\n\nsee [calls](calls.md#no-such-anchor)\n"),
    ("repo-path", "sim/zz_selftest.c", "/* as sim/no_such_file.c does */\n"),
    ("file-name", "sim/zz_selftest.c",
     "/*\n * map:\n *   calls_no_such.c  a module that is gone\n */\n"),
    ("no-private-ref", "sim/zz_selftest.c", "/* (issue #4) */\n"),
    ("no-private-ref", "sim/zz_selftest.c", "/* the layout of seed 001 */\n"),
    ("no-private-ref", "sim/zz_selftest.c", "/* DESIGN.md 2.4 */\n"),
    ("no-private-ref", "tests/zz_selftest.sh", "# after #6868: the order\n"),
    ("rule-families", None, None),
]


def copy_tree(root, dst):
    for rel in walk(root):
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copyfile(os.path.join(root, rel), os.path.join(dst, rel))


def self_test(root):
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        copy_tree(root, base)
        before = {c: 0 for c in CHECKS}
        for p in Checker(base).run():
            before[p[0]] += 1
        for i, (check, rel, text) in enumerate(BREAKS):
            work = os.path.join(tmp, "t%d" % i)
            shutil.copytree(base, work)
            if rel is None:
                defs = [f for f in walk(work) if f.endswith("/rules.def")]
                if not defs:
                    print("citations: self-check %d skipped: no rules.def" % i)
                    continue
                path = os.path.join(work, defs[0])
                src = open(path, encoding="utf-8").read()
                open(path, "w", encoding="utf-8").write(
                    re.sub(r"GT7xx", "GT7??", src, count=1))
            else:
                with open(os.path.join(work, rel), "a",
                          encoding="utf-8") as f:
                    f.write(text)
            after = sum(1 for p in Checker(work).run() if p[0] == check)
            if after > before[check]:
                passed += 1
            else:
                failed += 1
                print("citations: FAIL self-check: a broken %s (%s) was not "
                      "reported" % (check, (text or "rules.def").strip()))
    print("citations: self-check: %d of %d injected breaks reported" %
          (passed, passed + failed))
    return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--no-self-test", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    problems = Checker(root).run()
    passed = failed = 0
    for check in CHECKS:
        mine = [p for p in problems if p[0] == check]
        for _, rel, line, msg in mine:
            print("%s:%d: %s: %s" % (rel, line, check, msg))
        if mine:
            failed += 1
            print("citations: FAIL %s (%d)" % (check, len(mine)))
        else:
            passed += 1
            print("citations: ok %s" % check)
    if not a.no_self_test:
        p, f = self_test(root)
        passed += p
        failed += f
    print("RESULT %d %d 0" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
