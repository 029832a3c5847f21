#!/usr/bin/python3
"""The documentation a newcomer follows holds together: README.md opens with
the two commands for a fresh machine and leads to docs/first-steps.md and CHANGELOG.md; every
relative link and image in README.md, CHANGELOG.md, CONTRIBUTING.md and docs/*.md names a file
that exists; every sweep file and script the docs name is in the tree, and so is every source
file CONTRIBUTING.md names (its examples).

    /usr/bin/python3 tests/layout/check_docs.py --source .
"""
import argparse
import glob
import os
import re
import sys


# Names the docs give to a user's own sweep file, in examples and error messages.
USERS_OWN = {"sweeps/x.yaml", "sweeps/clm.yaml"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    root = parser.parse_args().source
    problems = []

    readme = open(os.path.join(root, "README.md")).read()
    block = re.search(r"```sh\n(.*?)```", readme, re.S)
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()] if block else []
    if commands[:2] != ["scripts/quickstart", "scripts/test"]:
        problems.append(f"README.md: its first sh block should be scripts/quickstart then "
                        f"scripts/test, not {commands[:2]}")
    for target in ("docs/first-steps.md", "CHANGELOG.md"):
        if f"]({target})" not in readme:
            problems.append(f"README.md: no link to {target}")

    pages = [os.path.join(root, n) for n in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for page in pages:
        text = open(page).read()
        here = os.path.dirname(page)
        rel = os.path.relpath(page, root)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link) or link.startswith("#"):
                continue  # a URL or an anchor on the page
            path = link.split("#")[0]
            if not os.path.exists(os.path.normpath(os.path.join(here, path))):
                problems.append(f"{rel}: the link {link} names no file")
        if rel == "CONTRIBUTING.md":
            for named in set(re.findall(r"`((?:src|launch|postprocess|tests)/[\w./*-]+)`", text)):
                if not glob.glob(os.path.join(root, named)):
                    problems.append(f"{rel}: {named} is not in the tree")
        for named in set(re.findall(r"\b((?:sweeps|scripts)/[\w.-]+)", text)):
            if named.endswith((".", "-")) or named in USERS_OWN:
                continue
            if not os.path.exists(os.path.join(root, named)):
                problems.append(f"{rel}: {named} is not in the tree")

    for p in problems:
        print(p)
    print(f"{len(pages)} pages checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
