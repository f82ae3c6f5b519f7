#!/usr/bin/env python3
# Check that no two files of a folder of user/ call each other in a loop:
# a file that calls another's functions is not called back by it, directly
# or through a third. A loop means two jobs grown into one; the layering
# check (check-layers.sh) sees folders, this one the files within each.
# Arguments: the folders. Prints each loop and fails if there is one.
import os
import re
import sys

# a public function's definition: its name at the start of a line's
# declarator, mt_ prefixed, followed by its body
DEF = re.compile(r'^(?!static\b)[A-Za-z_][\w \t\*]*?\b(mt_\w+)\s*\([^;{]*\)\s*\{',
                 re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def calls(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith('.c'))
    text = {}
    owner = {}
    for f in files:
        with open(os.path.join(folder, f)) as fh:
            text[f] = COMMENT.sub('', fh.read())
        for m in DEF.finditer(text[f]):
            owner[m.group(1)] = f
    edges = {f: set() for f in files}
    for f in files:
        for name in set(re.findall(r'\b(mt_\w+)\s*\(', text[f])):
            g = owner.get(name)
            if g and g != f:
                edges[f].add(g)
    return edges


def loop_from(edges, start):
    """a path from start back to itself, or None"""
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges[node]):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


bad = False
for folder in sys.argv[1:]:
    edges = calls(os.path.join('user', folder))
    for f in sorted(edges):
        path = loop_from(edges, f)
        if path and path[0] == min(path[:-1]):
            print('check-calls: user/%s: %s call each other in a loop'
                  % (folder, ' -> '.join(path)), file=sys.stderr)
            bad = True
sys.exit(1 if bad else 0)
