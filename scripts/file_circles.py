#!/usr/bin/env python3
"""Whether the files of one library call each other in a circle (issue 27: the files of a
module stack in layers, a lower file never calling a higher one). Reads the symbols of
the library's object files with nm, draws an edge from a file to each file that defines a
symbol it uses, and prints every circle (a strongly connected group of files) with the
symbols that close it. Exit 0: none; 1: circles; 2: bad usage or nm failed.

Usage: file_circles.py OBJECT.o... (ctest passes $<TARGET_OBJECTS:lib>, tests/build.cmake)
Not for: calls through function pointers (ops tables), which nm cannot see and which are
how a lower file is meant to reach a higher one."""
import collections
import os
import subprocess
import sys


def name_of(path):
    base = os.path.basename(path)
    for ext in (".c.o", ".cu.o", ".o"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def symbols(path):
    try:
        out = subprocess.run(["nm", path], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"file_circles: cannot read {path} with nm: {e}")
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDRB":
            defined.add(parts[2])
    return defined, used


def circles(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main(argv):
    objs = [a for a in argv if a.endswith(".o")]
    if not objs:
        print(__doc__, file=sys.stderr)
        return 2
    owner, used_by = {}, {}
    for o in objs:
        d, u = symbols(o)
        used_by[name_of(o)] = u
        for s in d:
            owner[s] = name_of(o)
    edges = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for f, used in used_by.items():
        edges[f]
        for s in used:
            g = owner.get(s)
            if g and g != f:
                edges[f].add(g)
                why[f, g].add(s)
    found = circles(edges)
    for group in found:
        print("circle: " + ", ".join(group))
        for a in group:
            for b in sorted(edges[a] & set(group)):
                print(f"  {a} -> {b}: {', '.join(sorted(why[a, b]))}")
    if found:
        print("file_circles: move what both files need into a lower file (as scheduler/"
              "journal.c and search/dim.c are), or reach the higher one through an ops table")
        return 1
    print(f"file_circles: {len(edges)} files, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
