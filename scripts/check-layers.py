#!/usr/bin/env python3
"""Fails when a file includes a header of a layer above its own (docs/architecture.md, "Layers").

Layers, lowest first:

    core  <-  dsl  <-  codegen  <-  backend  <-  run  <-  api  <-  tools, python

core's public headers are include/jit/core/*.hpp (value types every layer may hold: arrays,
element types, errors, stop requests and progress, the values bound to variables), and
include/jit/{array,dtype,error,cancel}.hpp, which include them; the other public headers
(include/jit/*) belong to api. A file may include headers of its own layer and of layers below.
tools/ and python/ (the extension's C++) are clients of the public API: they include only
include/jit/ and their own files.

    scripts/check-layers.py [--libraries-only] [ROOT]
        exit status 0: no upward include; 1: the offending lines. --libraries-only leaves tools/
        and python/ out.
"""
import os
import re
import sys

LAYERS = ["core", "dsl", "codegen", "backend", "run", "api", "tools"]
RANK = {name: i for i, name in enumerate(LAYERS)}
CLIENTS = {"tools", "python"}  # the public API's clients: include/jit/ and their own files only
CORE_FORWARDERS = {"jit/array.hpp", "jit/dtype.hpp", "jit/error.hpp", "jit/cancel.hpp"}
SOURCE_DIRS = ["core", "dsl", "codegen", "backend", "run", "api", "tools", "python/src", "include/jit"]
EXTENSIONS = (".cpp", ".hpp", ".h", ".inc", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def core_public(path):
    """Whether a public header (jit/...) belongs to core."""
    return path.startswith("jit/core/") or path in CORE_FORWARDERS


def layer_of_file(rel):
    """The layer a file of the tree belongs to."""
    if rel.startswith("include/jit/"):
        return "core" if core_public(rel[len("include/"):]) else "api"
    return rel.split("/", 1)[0]


def layer_of_include(path, quoted, including_dir):
    """The layer of an included header, or None for headers that are not jitexpr's."""
    if not quoted:
        if path.startswith("jit/"):
            return "core" if core_public(path) else "api"
        return None  # the standard library, fmt, Boost, CUDA, ...
    top = path.split("/", 1)[0]
    if "/" in path and top in RANK:
        return top
    if "/" not in path or top not in RANK:
        return layer_of_file(os.path.join(including_dir, path).replace(os.sep, "/"))
    return None


def main():
    args = sys.argv[1:]
    libraries_only = "--libraries-only" in args
    args = [a for a in args if a != "--libraries-only"]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    checked = 0
    for top in SOURCE_DIRS:
        if libraries_only and top.split("/")[0] in CLIENTS:
            continue
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                own = layer_of_file(rel)
                checked += 1
                with open(full, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        quoted, path = m.group(1) == '"', m.group(2)
                        target = layer_of_include(path, quoted, os.path.dirname(rel))
                        if target is None:
                            continue
                        if own in CLIENTS:
                            ok = target == own or (not quoted and path.startswith("jit/"))
                        else:
                            ok = RANK[target] <= RANK[own]
                        if not ok:
                            problems.append(f"{rel}:{lineno}: {own}/ includes {path} ({target}/)")
    if problems:
        print("includes that run from a lower layer to a higher one (see docs/architecture.md):")
        print("\n".join(problems))
        return 1
    print(f"layers: {checked} files, no upward include")
    return 0


if __name__ == "__main__":
    sys.exit(main())
