#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Layers see their context, not the model.

A layer (ext/engine/layers/) is given a tt_init_ctx while the graph is
built and a tt_run_ctx during a step (core/tt_layer.h); the kernels
(ext/engine/kernels/) are given arrays. Neither may include
core/tt_internal.h, which defines the model, or name tt_model; and
tt_layer.h itself must not include tt_internal.h or name tt_model.
Comments and strings are not code: a comment may name the model. Prints
every file checked and every offending line; fails on one.

usage: check_layer_context.py ENGINE_DIR   (the source's ext/engine)
"""
import os
import re
import sys

# what a file of these folders must not hold, with the reason printed
RULES = [
    (re.compile(r'#\s*include\s*[<"]tt_internal\.h[">]'),
     'includes tt_internal.h (the model); include tt_layer.h'),
    (re.compile(r'\btt_model\w*'),
     'names the model; use the layer contexts of tt_layer.h'),
]


def code_only(text):
    """The text with comments and string literals blanked, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
        elif text.startswith('//', i):
            end = text.find('\n', i)
            end = n if end < 0 else end
            out.append(' ' * (end - i))
            i = end
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] not in (c, '\n'):
                j += 2 if text[j] == '\\' else 1
            end = j + 1 if j < n and text[j] == c else j
            literal = text[i:end]
            # an #include's name is kept: it is what the rules read
            keep = c == '"' and out_is_include(out)
            out.append(literal if keep else ' ' * len(literal))
            i = end
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def out_is_include(out):
    """Whether the line written so far is an #include (keep its name)."""
    line = ''.join(out).rsplit('\n', 1)[-1]
    return re.match(r'\s*#\s*include\s*$', line) is not None


def check(path, label):
    with open(path, encoding='utf-8') as f:
        code = code_only(f.read())
    found = []
    for number, line in enumerate(code.split('\n'), 1):
        for pattern, why in RULES:
            if pattern.search(line):
                found.append(f'  {label}:{number}: {why}: {line.strip()}')
    return found


def main():
    engine = sys.argv[1]
    files = []
    for folder in ('layers', 'kernels'):
        for name in sorted(os.listdir(os.path.join(engine, folder))):
            if name.endswith(('.c', '.h')):
                files.append(f'{folder}/{name}')
    files.append('core/tt_layer.h')
    found = []
    for label in files:
        path = os.path.join(engine, label)
        problems = (check(path, label) if os.path.exists(path) else
                    [f'  {label}: missing (the header layers include)'])
        print(f'{label}: {"ok" if not problems else "REFUSED"}')
        found += problems
    for line in found:
        print(line)
    if found:
        print(f'{len(found)} line(s) reach past the layer contexts')
        return 1
    print(f'{len(files)} files: none includes tt_internal.h or names tt_model')
    return 0


if __name__ == '__main__':
    sys.exit(main())
