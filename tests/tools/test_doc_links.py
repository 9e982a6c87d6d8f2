"""Every relative link of README.md and docs/*.md leads somewhere: the file
it names exists in the checkout, and a #fragment is a heading of that file
(GitHub's anchors: lower case, punctuation dropped, spaces to hyphens). Links
in code blocks and code spans are text, not links; http(s) and mailto links
are not followed (the machine may be offline).

Usage: test_doc_links.py SOURCE_ROOT. Prints a line per page and per broken
link; exits 1 when one is broken."""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(text):
    """The text outside fenced blocks and code spans, line by line."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "", line)


def anchors(path):
    """GitHub's anchors for the headings of the markdown file at path."""
    seen = {}
    out = set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for _, line in prose(text):
        m = re.match(r"^#{1,6} +(.*?) *#* *$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def main():
    root = sys.argv[1]
    pages = [os.path.join(root, "README.md")]
    pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    broken = 0
    for page in pages:
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        count = 0
        for number, line in prose(text):
            for target in LINK.findall(line):
                if re.match(r"^(https?|mailto):", target):
                    continue
                count += 1
                path, _, fragment = target.partition("#")
                dest = os.path.normpath(
                    os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    print(f"FAIL: {rel}:{number}: the link to {target} names "
                          f"{os.path.relpath(dest, root)}, which does not exist")
                    broken += 1
                elif fragment and dest.endswith(".md") and \
                        fragment not in anchors(dest):
                    print(f"FAIL: {rel}:{number}: the link to {target}: "
                          f"{os.path.relpath(dest, root)} has no heading "
                          f"whose anchor is #{fragment}")
                    broken += 1
        print(f"ok: {rel}: {count} relative links read")
    print(f"{broken} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
