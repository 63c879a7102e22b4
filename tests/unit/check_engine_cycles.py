#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""No dependency cycles between the engine's files.

Reads the engine's static library with nm: file A depends on file B when
A uses a symbol B defines. A cycle (A needs B needs ... needs A) means
neither can be built, tested or fuzzed without the other; the engine had
one of 21 files (docs/architecture.md). Prints every cycle with the edges
inside it, and fails when there is one.

usage: check_engine_cycles.py LIBTTENGINE_A [NM]
"""
import collections
import subprocess
import sys


def nm_lines(nm, lib, *flags):
    out = subprocess.run([nm, '-A', *flags, lib], capture_output=True,
                         text=True, check=True).stdout
    # "LIBRARY:MEMBER.o:VALUE TYPE SYMBOL" (VALUE blank when undefined)
    for line in out.splitlines():
        if not line.startswith(lib + ':'):
            continue
        member, sep, rest = line[len(lib) + 1:].partition('.o:')
        fields = rest.split()
        if sep and fields:
            yield member.rsplit('/', 1)[-1] + '.o', fields


def main():
    lib = sys.argv[1]
    nm = sys.argv[2] if len(sys.argv) > 2 else 'nm'
    defined = {}
    for obj, f in nm_lines(nm, lib, '--defined-only'):
        # i: a GNU indirect function (TT_VECTOR_CLONES' resolver)
        if len(f) == 3 and f[1] in 'TDRBi':
            defined[f[2]] = obj
    deps = collections.defaultdict(set)
    for obj, f in nm_lines(nm, lib, '--undefined-only'):
        sym = f[-1]
        if sym in defined and defined[sym] != obj:
            deps[obj].add(defined[sym])
    objs = sorted(set(defined.values()) | set(deps))

    # Tarjan's strongly connected components, iteratively
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    counter = 0
    for root in objs:
        if root in index:
            continue
        work = [(root, iter(sorted(deps[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(deps[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))

    print(f'{len(objs)} engine files, '
          f'{sum(len(d) for d in deps.values())} dependencies')
    for comp in cycles:
        print(f'cycle of {len(comp)} files:')
        members = set(comp)
        for v in comp:
            print(f'  {v} -> {", ".join(sorted(deps[v] & members))}')
    if cycles:
        print(f'{len(cycles)} cycle(s): a file of the engine depends on '
              'itself through others')
        return 1
    print('no cycle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
