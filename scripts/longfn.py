#!/usr/bin/env python3
"""longfn.py [--max N] DIR...: the C functions of DIR (its .c files and those one
folder down) whose body is longer than N lines (default 80), counted from the line of
the opening brace at column 0 to its closing brace.

Prints `LINES FILE:LINE NAME` for each, longest first, and exits 1 when there is any.
It reads C as text (house style: a function's '{' alone at column 0); strings,
character literals and comments are blanked before braces are counted."""
import re
import sys
from pathlib import Path


def blank(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    return re.sub(r'//[^\n]*', '', text)


def long_functions(path, limit):
    raw = path.read_text(errors='replace').split('\n')
    lines = blank('\n'.join(raw)).split('\n')
    depth, start, out = 0, None, []
    for i, line in enumerate(lines):
        if depth == 0 and start is None and line.startswith('{'):
            j = i - 1
            while j >= 0 and '(' not in lines[j]:
                j -= 1
            m = re.search(r'(\w+)\s*\(', lines[j]) if j >= 0 else None
            name, start = (m.group(1) if m else '?'), i
        depth += line.count('{') - line.count('}')
        if depth == 0 and start is not None:
            if i - start + 1 > limit:
                out.append((i - start + 1, f'{path}:{start + 1}', name))
            start = None
    return out


def main(argv):
    limit = 80
    if len(argv) > 1 and argv[0] == '--max':
        limit, argv = int(argv[1]), argv[2:]
    found = []
    for d in argv:
        for f in sorted(list(Path(d).glob('*.c')) + list(Path(d).glob('*/*.c'))):
            found += long_functions(f, limit)
    for n, where, name in sorted(found, reverse=True):
        print(n, where, name)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
