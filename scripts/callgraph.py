#!/usr/bin/env python3
"""callgraph.py [--group NAME=GLOB,GLOB...]... DIR...: which .c files of DIR call
functions defined in another .c file of DIR, and whether those calls go round in a
circle.

Prints one line per file, `a.c -> b.c (f, g)`, then the circles (strongly connected
groups of files), one a line, or `no cycle`. With --group, the files a glob names are
one node (a subsystem whose files share one private header), and the circles inside
it are listed apart, as `inside NAME`. Exits 1 when there is a circle between nodes.

It reads C as text: a function is defined where a line at column 0 names it before
'(' and is followed by a line that is '{' alone or ends the definition's head (the
house style); a call is the name followed by '('. Static functions are local to their
file and left out. Good enough for a layering check, not a compiler."""
import re
import sys
from pathlib import Path

DEF = re.compile(r'^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])([A-Za-z_]\w*)\(')
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')


def strip(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def definitions(lines):
    out = set()
    for i, line in enumerate(lines):
        m = DEF.match(line)
        if not m or line.rstrip().endswith(';'):
            continue
        # the head may go on over lines; the body's '{' comes before any ';'
        j = i
        while j < len(lines) and '{' not in lines[j] and ';' not in lines[j]:
            j += 1
        if j < len(lines) and '{' in lines[j]:
            out.add(m.group(1))
    return out


def main(argv):
    groups, dirs = {}, []
    while argv:
        a = argv.pop(0)
        if a == '--group':
            name, globs = argv.pop(0).split('=', 1)
            groups[name] = globs.split(',')
        else:
            dirs.append(a)
    files = sorted(p for d in dirs or ['.'] for p in Path(d).glob('*.c'))
    text = {p: strip(p.read_text()) for p in files}
    owner = {}
    for p in files:
        for f in definitions(text[p].split('\n')):
            owner.setdefault(f, p)
    edges = {p: {} for p in files}
    for p in files:
        for name in CALL.findall(text[p]):
            q = owner.get(name)
            if q and q != p:
                edges[p].setdefault(q, set()).add(name)
    for p in files:
        for q in sorted(edges[p]):
            print(f'{p} -> {q} ({", ".join(sorted(edges[p][q]))})')
    node = {p: next((g for g, gl in groups.items() if any(p.match(x) for x in gl)), str(p)) for p in files}
    inside = {}
    for g in set(node.values()):
        members = [p for p in files if node[p] == g]
        if len(members) > 1:
            inside[g] = cycles(members, {p: {q for q in edges[p] if node[q] == g} for p in members})
    nodes = sorted(set(node.values()))
    nedges = {n: set() for n in nodes}
    for p in files:
        for q in edges[p]:
            if node[q] != node[p]:
                nedges[node[p]].add(node[q])
    sccs = cycles(nodes, nedges)
    print(f'{len(files)} files, {sum(len(e) for e in edges.values())} file-to-file call edges; '
          f'{len(nodes)} nodes, {sum(len(e) for e in nedges.values())} node-to-node edges')
    for g, cs in sorted(inside.items()):
        for c in cs:
            print(f'inside {g}: cycle ({len(c)} files): ' + ' '.join(str(p) for p in c))
    for c in sccs:
        print(f'cycle ({len(c)} nodes): ' + ' '.join(str(p) for p in c))
    if not sccs:
        print('no cycle' + (' between nodes' if groups else ''))
    return 1 if sccs else 0


def cycles(vertices, edges):
    """The strongly connected groups of more than one vertex (Tarjan)."""
    # Tarjan's strongly connected components
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in vertices:
        if v not in index:
            visit(v)
    return sccs


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
