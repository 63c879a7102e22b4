#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The generated parts of the manual, from what the build prints.

docs/elements.md and docs/cli.md hold hand-written prose around blocks

    <!-- BEGIN GENERATED: properties of tensor_trainer -->
    <!-- END GENERATED -->

that this script fills: an element's pads and property table from
`gst-inspect-1.0 ELEMENT`, or a program's `--help` output. The reference
then cannot drift from the code: the docs_reference test runs this
script with --check, which fails (printing the difference) when a
committed block differs from what the build prints.

Usage: scripts/gen-reference.py [--check] BUILD_DIR [FILE...]
  FILEs default to docs/elements.md and docs/cli.md; without --check the
  blocks are rewritten in place.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = ["docs/elements.md", "docs/cli.md"]
BEGIN = re.compile(r"^<!-- BEGIN GENERATED: (.+?) -->$")
END = "<!-- END GENERATED -->"

# every element has them, with a default that counts instances: not
# part of an element's reference
INHERITED = {"name", "parent"}


def run(argv, env=None):
    """A command's standard output; fails loudly on a non-zero exit."""
    full_env = dict(os.environ)
    full_env.update({"LC_ALL": "C", "GST_INSPECT_NO_COLORS": "1",
                     "PAGER": "cat"})
    if env:
        full_env.update(env)
    res = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("gen-reference: %s exited %d: %s" %
                 (" ".join(argv), res.returncode, res.stderr.strip()))
    return res.stdout


class Inspector:
    """gst-inspect-1.0 against the build's plugin alone, in a registry of
    its own (so the system's plugins and caches play no part)."""

    def __init__(self, build):
        self.plugin_dir = os.path.join(build, "gst")
        self.tmp = tempfile.TemporaryDirectory()

    def inspect(self, element):
        return run(["gst-inspect-1.0", element], {
            "GST_PLUGIN_SYSTEM_PATH_1_0": "",
            "GST_PLUGIN_PATH_1_0": self.plugin_dir,
            "GST_REGISTRY": os.path.join(self.tmp.name, "registry.bin"),
            "GST_REGISTRY_FORK": "no",
        })


def sections(text):
    """gst-inspect's output as {heading: [lines]}, headings being the
    unindented lines that end in ':'."""
    out, cur = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            # 'Element has no clocking capabilities.' ends a section too
            cur = line.rstrip()[:-1] if line.rstrip().endswith(":") else None
            if cur is not None:
                out[cur] = []
        elif cur is not None:
            out[cur].append(line.rstrip())
    return out


def cell(s):
    return s.replace("|", "\\|").strip()


def parse_properties(lines):
    """[(name, blurb, flags, type line, [value lines])] from the lines of
    'Element Properties'."""
    props = []
    for line in lines:
        m = re.match(r"^  (\S+?)\s*: (.*)$", line)
        if m and not line.startswith("   "):
            props.append([m.group(1), m.group(2), "", "", []])
            continue
        if not props or not line.strip():
            continue
        s = line.strip()
        p = props[-1]
        if s.startswith("flags: ") and not p[2]:
            p[2] = s[len("flags: "):]
        elif not p[3]:
            p[3] = s
        else:
            p[4].append(s)
    return props


def describe_type(type_line, values):
    """(type, range or values, default) from a type line such as
    'Unsigned Integer. Range: 0 - 256 Default: 1' or
    'Enum "GstX" Default: 0, "planar"' and an enum's value lines."""
    default = ""
    m = re.search(r"\s*Default: (.*)$", type_line)
    if m:
        default = m.group(1).strip()
        type_line = type_line[:m.start()]
    rng = ""
    m = re.search(r"\s*Range: (.*)$", type_line)
    if m:
        rng = re.sub(r"\s+", " ", m.group(1).strip())
        type_line = type_line[:m.start()]
    typ = type_line.strip().rstrip(".")
    if typ.startswith("Enum") or typ.startswith("Flags"):
        # '(0): planar           - Planar C:H:W ...'
        names = []
        for v in values:
            vm = re.match(r"^\((-?\w+)\): (\S+)\s+- (.*)$", v)
            if vm:
                names.append("`%s` (%s)" % (vm.group(2), vm.group(3)))
        rng = "; ".join(names)
        dm = re.match(r'^\S+, "(.*)"$', default)
        if dm:
            default = dm.group(1)
    if default in ("null", "NULL"):
        default = "none"
    return typ, rng, default


def describe_flags(flags):
    parts = [f.strip() for f in flags.split(",")]
    access = ("read/write" if "readable" in parts and "writable" in parts
              else "read-only" if "readable" in parts else "write-only")
    when = ""
    for f in parts:
        if f.startswith("changeable only in"):
            when = f[len("changeable only in "):].replace(" state", "")
        elif f.startswith("changeable in"):
            when = "any state"
    if access != "read/write":
        return access
    # GStreamer's mutability flags are optional: say so when absent
    return when or "not stated"


def element_block(inspector, element):
    sec = sections(inspector.inspect(element))
    out = []
    details = {}
    for line in sec.get("Factory Details", []):
        m = re.match(r"^\s+(\S[\w-]*(?: \S[\w-]*)?)\s{2,}(.*)$", line)
        if m:
            details[m.group(1)] = m.group(2)
    out.append("*%s* (%s). %s" % (details.get("Long-name", element),
                                  details.get("Klass", ""),
                                  details.get("Description", "")))
    out.append("")
    out.append("Pad templates:")
    out.append("")
    out.append("```")
    pads = sec.get("Pad Templates", [])
    while pads and not pads[-1].strip():
        pads.pop()
    out.extend(line[2:] if line.startswith("  ") else line
               for line in pads if line.strip())
    out.append("```")
    out.append("")
    out.append("| property | type | default | range or values | "
               "changeable in | what it does |")
    out.append("|---|---|---|---|---|---|")
    for name, blurb, flags, type_line, values in parse_properties(
            sec.get("Element Properties", [])):
        if name in INHERITED:
            continue
        typ, rng, default = describe_type(type_line, values)
        out.append("| `%s` | %s | %s | %s | %s | %s |" % (
            name, cell(typ), cell(default), cell(rng),
            describe_flags(flags), cell(blurb)))
    return out


def help_block(build, what):
    """`tensor-trainer --help` and the like: the text as printed."""
    words = what.split()
    prog = {"tensor-trainer": os.path.join(build, "tools", "tensor-trainer"),
            "tt-launch": os.path.join(build, "tools", "tt-launch")}
    if words[0] not in prog:
        sys.exit("gen-reference: unknown program in '%s'" % what)
    lines = [line.rstrip() for line in run([prog[words[0]]] + words[1:])
             .splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return ["```"] + lines + ["```"]


def generate(build, inspector, what):
    m = re.match(r"^properties of (\S+)$", what)
    if m:
        return element_block(inspector, m.group(1))
    if what.endswith("--help"):
        return help_block(build, what)
    sys.exit("gen-reference: no generator for '%s'" % what)


def regenerate(path, build, inspector):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        m = BEGIN.match(line)
        i += 1
        if not m:
            continue
        while i < len(lines) and lines[i] != END:
            i += 1
        if i == len(lines):
            sys.exit("%s: '%s' has no '%s'" % (path, line, END))
        out.extend(generate(build, inspector, m.group(1)))
        out.append(END)
        i += 1
    return "\n".join(lines), "\n".join(out)


def main(argv):
    check = False
    if argv and argv[0] == "--check":
        check, argv = True, argv[1:]
    if not argv:
        sys.exit(__doc__.strip().split("\n\n")[-1])
    build = os.path.abspath(argv[0])
    files = argv[1:] or [os.path.join(TOP, f) for f in DEFAULT_FILES]
    inspector = Inspector(build)
    stale = []
    for path in files:
        old, new = regenerate(path, build, inspector)
        if old == new:
            continue
        if check:
            stale.append(path)
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True),
                path + " (committed)", path + " (as the build prints it)"))
        else:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(path + ".tmp", path)
            print("gen-reference: rewrote %s" % path)
    if stale:
        print("\ngen-reference: %s differ from the build; run "
              "scripts/gen-reference.py BUILD_DIR to rewrite them"
              % ", ".join(stale))
        return 1
    if check:
        print("gen-reference: %d file(s) match the build" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
