#!/usr/bin/env python3
"""Checks every quoted #include of the project against the declared CMake dependencies.

Each C++ file may include, with quotes, only headers of
  - its own folder, or a folder whose sources its target compiles itself (a fuzzer built from
    the pure files of a library whose other files clang cannot build), or
  - the folder of a project library that its target declares:
      a library (src/<folder>): only the libraries it links directly (target_link_libraries),
        so every arrow of docs/ARCHITECTURE.md is written in its CMakeLists.txt;
      an executable (a test, bench, fuzzer, the CLI): those it links and their PUBLIC
        dependencies (CMake's usage requirements), since nothing builds on an executable.
A library's folder is the common directory of its sources, so src/transport/test_tools (the
test-only target kvcs_transport_test_tools) is a folder of its own: production code in
src/transport may not include it. A header belongs to the targets whose sources sit in its
folder (the folder's library when there is one). A file that no target builds, and a quoted
include that resolves to no file, are errors too.

The target manifest is written by cmake/source_checks.cmake at configure time, one line per
target: name TAB type TAB linked-libraries(;) TAB sources(;) TAB interface-libraries(;).

usage: check_includes.py --manifest FILE --root DIR --scan DIR [DIR ...] [--ignore-unowned]
Exit status: 0 clean, 1 violations (listed on stderr), 2 usage or unreadable input.
"""
import argparse
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE_EXTS = ('.cc', '.h', '.cpp', '.hpp', '.c', '.inc')
LIBRARY_TYPES = ('STATIC_LIBRARY', 'SHARED_LIBRARY', 'OBJECT_LIBRARY', 'MODULE_LIBRARY')


class Target:
    def __init__(self, name, kind, deps, sources, interface=()):
        self.name, self.kind, self.deps, self.interface = name, kind, deps, list(interface)
        self.sources = [os.path.normpath(s) for s in sources]
        self.folder = (os.path.dirname(self.sources[0]) if len(self.sources) == 1 else
                       os.path.commonpath(self.sources)) if self.sources else None

    @property
    def is_library(self):
        return self.kind in LIBRARY_TYPES


def read_manifest(path):
    targets = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            parts = line.split('\t')
            if len(parts) == 4:
                parts.append('')
            if len(parts) != 5:
                raise ValueError(f'{path}: malformed line: {line!r}')
            name, kind, deps, sources, interface = parts
            srcs = [s for s in sources.split(';') if s and not s.startswith('$<')]
            split = lambda v: [d for d in v.split(';') if d]  # noqa: E731
            targets[name] = Target(name, kind, split(deps), srcs, split(interface))
    # An executable's declared dependencies include the PUBLIC closure of what it links.
    for t in targets.values():
        if t.is_library:
            continue
        seen, todo = set(), list(t.deps)
        while todo:
            d = todo.pop()
            if d in seen or d not in targets:
                continue
            seen.add(d)
            todo += targets[d].interface
        t.deps = sorted(seen)
    return targets


def strip_comments(text):
    # Removes /* */ and // comments so that commented-out includes are not checked.
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def check(targets, root, scan_dirs, ignore_unowned=False):
    root = os.path.abspath(root)
    owners = {}  # file -> [targets that compile it]
    for t in targets.values():
        for s in t.sources:
            owners.setdefault(s, []).append(t)
    # folder -> targets whose own folder it is; a library wins over the others for headers.
    by_folder = {}
    for t in targets.values():
        if t.folder:
            by_folder.setdefault(t.folder, []).append(t)
    lib_folders = {t.name: t.folder for t in targets.values() if t.is_library and t.folder}

    def header_owners(path):
        folder = os.path.dirname(path)
        ts = by_folder.get(folder, [])
        libs = [t for t in ts if t.is_library]
        if libs:
            return libs
        if ts:
            return ts
        # A folder with no target of its own (headers only, or a target rooted above it).
        return [t for t in targets.values() if any(os.path.dirname(s) == folder for s in t.sources)]

    errors = []
    files = []
    for d in scan_dirs:
        base = os.path.join(root, d)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(x for x in dirnames if x not in ('corpus',))
            for fn in sorted(filenames):
                if fn.endswith(SOURCE_EXTS):
                    files.append(os.path.normpath(os.path.join(dirpath, fn)))
    for path in files:
        rel = os.path.relpath(path, root)
        ts = owners.get(path) or header_owners(path)
        if not ts:
            if ignore_unowned:
                continue
            errors.append(f'{rel}: no CMake target builds this file or owns its folder')
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            text = strip_comments(f.read())
        own = os.path.dirname(path)
        if path not in owners:
            # A header answers to its folder's targets together (one folder may hold two).
            merged = Target(' / '.join(t.name for t in ts), 'HEADER', [], [])
            merged.deps = sorted({d for t in ts for d in t.deps})
            ts = [merged]
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1)
            line = text.count('\n', 0, m.start()) + 1
            for t in ts:
                allowed = ({own} | {os.path.dirname(x) for x in t.sources} |
                           {lib_folders[d] for d in t.deps if d in lib_folders})
                # Resolve as the compiler would: beside the file, then the include roots.
                candidates = [os.path.join(own, inc), os.path.join(root, 'src', inc),
                              os.path.join(root, inc)] + [os.path.join(a, inc) for a in allowed]
                found = next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
                if found is None:
                    errors.append(f'{rel}:{line}: "{inc}" does not resolve to a project file')
                    break
                folder = os.path.dirname(found)
                if folder not in allowed:
                    names = sorted(n for n, fo in lib_folders.items() if fo == folder)
                    need = ' or '.join(names) if names else 'a library owning that folder'
                    errors.append(
                        f'{rel}:{line}: includes "{inc}" ({os.path.relpath(folder, root)}), '
                        f'but target {t.name} does not link {need}')
                    break
    return errors, len(files)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--manifest', required=True)
    ap.add_argument('--root', required=True)
    ap.add_argument('--scan', nargs='+', required=True)
    ap.add_argument('--ignore-unowned', action='store_true',
                    help='skip files no target builds (a configuration without tests)')
    a = ap.parse_args(argv)
    try:
        targets = read_manifest(a.manifest)
    except (OSError, ValueError) as e:
        print(f'check_includes: {e}', file=sys.stderr)
        return 2
    errors, n = check(targets, a.root, a.scan, a.ignore_unowned)
    for e in errors:
        print(f'include check: {e}', file=sys.stderr)
    if errors:
        print(f'include check: {len(errors)} violation(s) in {n} files; fix the include or declare '
              'the dependency with target_link_libraries (docs/ARCHITECTURE.md)', file=sys.stderr)
        return 1
    print(f'include check: {n} files, every quoted include within declared dependencies')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
