#!/usr/bin/env python3
"""Checks every relative Markdown link (and its #anchor) in README.md, ARCHITECTURE.md, docs/**/*.md and
bench/results/README.md. Usage: scripts/check-links.py [REPO_ROOT]. Exit status 1 on a broken link."""
import os, re, sys, glob
root = sys.argv[1] if len(sys.argv) > 1 else '.'
files = [os.path.join(root, n) for n in ('README.md', 'ARCHITECTURE.md', 'bench/results/README.md')]
files += glob.glob(os.path.join(root, 'docs/**/*.md'), recursive=True)
link = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)')
def anchors(path):
    out = set()
    in_code = False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r'#+\s+(.*)', line)
        if m:
            t = m.group(1).strip().lower()
            t = re.sub(r'[^\w\- ]', '', t).replace(' ', '-')
            out.add(t)
    return out
bad = 0
n = 0
for f in files:
    text = open(f, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    text = re.sub(r'`[^`\n]*`', '', text)
    for m in link.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r'[a-z]+:', target):
            continue
        n += 1
        path, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(dest):
            print(f'{os.path.relpath(f, root)}: missing {target}'); bad += 1; continue
        if anchor:
            if os.path.isdir(dest) or not dest.endswith('.md'):
                print(f'{os.path.relpath(f, root)}: anchor on non-Markdown {target}'); bad += 1
            elif anchor not in anchors(dest):
                print(f'{os.path.relpath(f, root)}: no anchor {target}'); bad += 1
print(f'{n} relative links checked in {len(files)} files, {bad} broken')
sys.exit(1 if bad else 0)
