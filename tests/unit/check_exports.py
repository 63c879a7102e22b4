#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libtensor-trainer.so exports exactly the public API.

Three lists must agree, each checked against the others both ways:
  - the functions the public headers declare (every one marked TT_API:
    a declaration without it would be hidden by -fvisibility=hidden);
  - the linker's list, ext/libtensor-trainer.map (what the library may
    export);
  - what the library exports, by nm -D --defined-only (functions, and no
    variable at all).
Prints each difference and fails when there is one.

usage: check_exports.py LIBTENSOR_TRAINER_SO MAP HEADER... [--nm NM]
"""
import re
import subprocess
import sys

# symbols the linker itself may define in a shared object
LINKER_SYMBOLS = {'_init', '_fini', '_edata', '_end', '__bss_start'}


def header_functions(path):
    """{name: has TT_API} of the functions a header declares."""
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    # preprocessor lines, with their continuations
    text = re.sub(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)
    found = {}
    for stmt in re.split(r'[;{}]', text):
        stmt = ' '.join(stmt.split())
        if stmt.startswith('typedef') or '(' not in stmt:
            continue
        m = re.match(r'^(TT_API )?(?:const |unsigned |struct )*\w+[ *]+'
                     r'(tt_\w+) ?\(.*\)$', stmt)
        if m:
            found[m.group(2)] = bool(m.group(1))
    return found


def map_globals(path):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'#[^\n]*', ' ', text)
    m = re.search(r'global:(.*?)local:', text, flags=re.S)
    if not m:
        sys.exit(f'{path}: no global: ... local: section')
    return {s.strip() for s in m.group(1).split(';') if s.strip()}


def exported(nm, lib):
    out = subprocess.run([nm, '-D', '--defined-only', lib],
                         capture_output=True, text=True, check=True).stdout
    funcs, other = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3 or f[2].split('@')[0] in LINKER_SYMBOLS:
            continue
        name = f[2].split('@')[0]
        if f[1] in 'Ti':
            funcs.add(name)
        else:
            other.add(f'{name} ({f[1]})')
    return funcs, other


def main():
    args = sys.argv[1:]
    nm = 'nm'
    if '--nm' in args:
        i = args.index('--nm')
        nm = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    lib, map_path, headers = args[0], args[1], args[2:]

    declared, unmarked = set(), []
    for h in headers:
        for name, marked in header_functions(h).items():
            declared.add(name)
            if not marked:
                unmarked.append(f'{h}: {name}')
    listed = map_globals(map_path)
    funcs, other = exported(nm, lib)

    problems = []
    problems += [f'declared without TT_API: {u}' for u in unmarked]
    for name in sorted(declared - listed):
        problems.append(f'declared in a header, missing from {map_path}: '
                        f'{name}')
    for name in sorted(listed - declared):
        problems.append(f'in {map_path}, declared in no public header: '
                        f'{name}')
    for name in sorted(declared - funcs):
        problems.append(f'declared, not exported by {lib}: {name}')
    for name in sorted(funcs - declared):
        problems.append(f'exported by {lib}, declared in no public header: '
                        f'{name}')
    for name in sorted(other):
        problems.append(f'exported by {lib}, not a function: {name}')
    for p in problems:
        print(p)
    print(f'{len(declared)} functions declared, {len(listed)} listed, '
          f'{len(funcs)} exported; {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
