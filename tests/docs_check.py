#!/usr/bin/env python3
"""What the user-facing documents name must exist.

  python3 tests/docs_check.py [REPO]

Reads README.md, docs/*.md, deploy/README.md and experiments/README.md and
fails (exit 1, one line per finding: file, line, what) when

  - a link to a file of the repository points at no file, or at a heading
    that file does not have (`[..](../README.md#running-things)`);
  - a path of the repository in backticks (`deploy/session.h`,
    `experiments/sweep.py`) names no file or folder;
  - `--set KEY=VALUE`, or a `key: value` in backticks, names a key that no
    table of docs/CONFIG.md or docs/OPERATORS.md declares;
  - `sluice-deploy VERB ...` names a verb docs/COMMANDS.md does not have, or
    an option that verb does not take;
  - the text speaks of the repository's history rather than of the code: an
    issue, a seed or a work session by number, a dated result folder, a date.

docs/CONFIG.md, docs/OPERATORS.md and docs/COMMANDS.md are printed by
`sluice-deploy keys` from the declarations (their own tests keep them in
step), so this check holds the prose to the code.
"""

import re
import sys
from pathlib import Path

REPO = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
DOCS = ["README.md", "deploy/README.md", "experiments/README.md"] + sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
TOP = ("base/", "transport/", "graph/", "node/", "loadgen/", "sink/", "runtime/", "deploy/",
       "experiments/", "tests/", "scripts/", "docs/", "bench/", ".ci/")

HISTORY = re.compile(r"\b(?:issues? \d+|seed 0\d\d|sessions? ?\d+|stop ?\d+|results/20\d\d\S*|"
                     r"20\d\d-\d\d-\d\d)\b", re.I)

# Words that read as `key: value` in prose without being keys of a file.
NOT_KEYS = {"error", "warning", "ok", "http", "https", "note"}


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path):
    out, fence = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def table_names(path):
    """The first column of every table row in backticks: the keys of CONFIG.md,
    the parameters of OPERATORS.md."""
    names = set()
    for line in path.read_text().splitlines():
        m = re.match(r"\|\s*`([a-z_][a-z0-9_]*)`\s*\|", line)
        if m:
            names.add(m.group(1))
    return names


def operator_kinds(path):
    return set(re.findall(r"^## `?([a-z_]+)`?", path.read_text(), re.M))


def verbs_and_options(path):
    """docs/COMMANDS.md: each verb (and alias) -> its options."""
    verbs, current = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"## ([a-z]+)$", line)
        if m:
            current = verbs.setdefault(m.group(1), set())
            continue
        m = re.match(r"`sluice-deploy ([a-z]+) \[OPTIONS\][^`]*`(?: \(also (.*)\))?", line)
        if m and m.group(2):
            for alias in re.findall(r"`([a-z]+)`", m.group(2)):
                verbs[alias] = verbs[m.group(1)]
        m = re.match(r"\| `([^`]+)` \|", line)
        if m and current is not None:
            for name in m.group(1).split(", "):
                current.add(name)
    return verbs


def code_spans(line):
    return re.findall(r"`([^`]+)`", line)


def main():
    problems = []
    keys = table_names(REPO / "docs/CONFIG.md") | table_names(REPO / "docs/OPERATORS.md")
    keys |= operator_kinds(REPO / "docs/OPERATORS.md")
    verbs = verbs_and_options(REPO / "docs/COMMANDS.md")
    if not keys or not verbs:
        print("docs_check: CONFIG.md, OPERATORS.md or COMMANDS.md has no tables to read")
        return 1
    anchors = {}

    for doc in DOCS:
        path = REPO / doc
        fence = False
        for n, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{doc}:{n}"
            if line.startswith("```"):
                fence = not fence
                continue
            # Links to files of the repository, and their headings.
            for target in ([] if fence else re.findall(r"\]\(([^)\s]+)\)", line)):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                dest = (path.parent / file).resolve() if file else path
                if not dest.exists():
                    problems.append(f"{where}: link to {target}: no such file")
                elif anchor and dest.suffix == ".md":
                    if dest not in anchors:
                        anchors[dest] = headings(dest)
                    if anchor not in anchors[dest]:
                        problems.append(f"{where}: link to {target}: {file or doc} has no such heading")
            spans = [line] if fence else code_spans(line)
            for span in spans:
                # Paths of the repository.
                for p in re.findall(r"(?<![\w./-])((?:%s)[\w./*<>{}-]*)" % "|".join(map(re.escape, TOP)), span):
                    p = p.rstrip(".,:;)")
                    if re.search(r"[*<>{}]|\.\.\.", p) or p.endswith("/N"):
                        continue
                    if not (REPO / p).exists():
                        problems.append(f"{where}: {p}: no such file or folder")
                # --set KEY=VALUE: the key is the last part of a dotted path.
                for k in re.findall(r"--set[ =]([A-Za-z_][\w.]*)=", span):
                    parts = k.split(".")
                    if "operators" in parts or k.isupper():
                        continue
                    if fence and not re.search(r"sluice-deploy|python3|\.sh\b|\\$", line):
                        continue  # an error message shown, not a command
                    if parts[-1] not in keys:
                        problems.append(f"{where}: --set {k}=...: no key '{parts[-1]}' in CONFIG.md")
                # sluice-deploy VERB --option ...
                for m in re.finditer(r"sluice-deploy\s+([a-z][a-z-]*)((?:[^|;&#`]|\.\.\.)*)", span):
                    verb, rest = m.group(1), re.sub(r"\"[^\"]*\"|'[^']*'", "", m.group(2))
                    if verb not in verbs:
                        problems.append(f"{where}: sluice-deploy {verb}: no such command in COMMANDS.md")
                        continue
                    for opt in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", rest):
                        if opt not in verbs[verb]:
                            problems.append(f"{where}: sluice-deploy {verb} {opt}: not an option of {verb}")
            # History: the code's docs say what it does, not when or by whom.
            for h in HISTORY.findall(line):
                problems.append(f"{where}: '{h}': speaks of the repository's history")
            # `key: value` in prose.
            if not fence:
                for span in code_spans(line):
                    m = re.fullmatch(r"([a-z][a-z0-9_]*): [^{}\[\]]+", span)
                    if m and m.group(1) not in keys and m.group(1) not in NOT_KEYS:
                        problems.append(f"{where}: `{span}`: no key '{m.group(1)}' in CONFIG.md")
    for p in problems:
        print(p)
    print(f"docs_check: {len(DOCS)} documents, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
