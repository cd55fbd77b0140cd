#!/usr/bin/env python3
"""The READMEs a user reads hold together: tables without stray blank lines or duplicate rows,
links and file names that exist in the tree, and no pointer to a document users do not have
(the steering repository's design notes).   check-readme.py SOURCE_ROOT"""

import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
readmes = ["README.md", "bindings/python/README.md", "bindings/node/README.md"]
# Documents of the repository the project was steered from, which a user of this one lacks.
ABSENT = ("DESIGN.md", "shared/specs", "shared/DESIGN", "design guide", "steering repository")
problems = []


def check_tables(name, lines):
    rows = {}
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            if line.strip() == "" and 0 < i < len(lines) - 1 and lines[i - 1].startswith("|") \
                    and lines[i + 1].startswith("|"):
                problems.append(f"{name}:{i + 1}: a blank line inside a table")
            if line.strip():
                rows = {}
            continue
        first = line.split("|")[1].strip()
        if re.fullmatch(r"-+|:?-+:?", first) or not first:
            continue
        for key in re.findall(r"`([^`]+)`", first) or [first]:
            if key in rows:
                problems.append(f"{name}:{i + 1}: the row for {key} repeats line {rows[key]}")
            rows[key] = i + 1


def check_paths(name, text):
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+://", link) and not (root / Path(name).parent / link).exists():
            problems.append(f"{name}: the link {link} leads nowhere")
    for path in re.findall(r"`([\w./-]+/[\w.-]+\.(?:md|c|h|sh|py|mjs|js))`", text):
        # An absolute path is an example of a path inside or outside a sandbox, not a file of
        # the tree.
        if path.startswith("/"):
            continue
        if not (root / path).exists() and not (root / Path(name).parent / path).exists():
            problems.append(f"{name}: {path} is not in the tree")
    for absent in ABSENT:
        if absent in text:
            problems.append(f"{name}: points at {absent!r}, which users of this repository lack")


for name in readmes:
    text = (root / name).read_text(encoding="utf-8")
    check_tables(name, text.split("\n"))
    check_paths(name, text)
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
