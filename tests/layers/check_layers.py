#!/usr/bin/env python3
"""Checks the include rules of docs/architecture.md on a source tree.

  src/util   includes only itself (by same-folder name, "json.h") and include/ (<agentsbx/...>)
  include/   includes only include/ and system headers
  helpers/   reach into src/ only for util/ and the wire contracts (mcp/frames.h,
             proto/), never the core's internals nor a backend

Usage: check_layers.py [--root DIR]. Prints one line per violation ("file:line: include ...:
reason") and exits 1 if there is any. The compiler enforces the util rule too (util's archive
is built with its own folder and include/ only); this check also catches the spellings the
compiler cannot see through, such as "../internal.h".
"""
import argparse
import os
import re
import sys

# What a helper may include from src/: the standalone layer and the wire contracts.
HELPER_SRC_ALLOWED = (re.compile(r'^util/[a-z0-9_]+\.h$'), re.compile(r'^proto/'),
                      re.compile(r'^mcp/(proto|frames)\.h$'))

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    """Yields (line number, kind, name) for each #include of a file; kind is '"' or '<'."""
    with open(path, encoding='utf-8', errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def sources(folder):
    """The C sources and headers under folder, sorted, as paths."""
    found = []
    for dirpath, _, names in os.walk(folder):
        found += [os.path.join(dirpath, n) for n in names if n.endswith(('.c', '.h'))]
    return sorted(found)


def project_header(root, name):
    """Whether an include name resolves to a header of the project outside include/."""
    return any(os.path.isfile(os.path.join(root, base, name))
               for base in ('src', 'helpers', 'backends', '.'))


def check_util(root, report):
    util = os.path.join(root, 'src', 'util')
    for path in sources(util):
        if os.path.dirname(path) != util:
            report(path, 0, '', 'src/util has no subfolders: the layer is one flat folder')
            continue
        for n, kind, name in includes(path):
            if kind == '"':
                if '/' in name or not os.path.isfile(os.path.join(util, name)):
                    report(path, n, name, 'src/util includes only its own files, by same-folder '
                           'name ("json.h"), and <agentsbx/...> from include/')
            elif project_header(root, name) and not name.startswith('agentsbx/'):
                report(path, n, name, 'src/util may not include a project header outside '
                       'itself and include/')


def check_include(root, report):
    inc = os.path.join(root, 'include')
    for path in sources(inc):
        for n, kind, name in includes(path):
            here = os.path.realpath(os.path.join(os.path.dirname(path), name))
            inside = os.path.isfile(here) and here.startswith(os.path.realpath(inc) + os.sep)
            if kind == '"' and not inside:
                report(path, n, name, 'a public header includes only public headers')
            elif kind == '<' and project_header(root, name) and \
                    not os.path.isfile(os.path.join(inc, name)):
                report(path, n, name, 'a public header includes only public headers')


def check_helpers(root, report):
    helpers = os.path.join(root, 'helpers')
    src = os.path.join(root, 'src')
    for path in sources(helpers):
        for n, kind, name in includes(path):
            if kind != '"':
                continue
            # Quoted names resolve next to the file or on the helpers' own include path first.
            if os.path.isfile(os.path.join(os.path.dirname(path), name)) or \
                    os.path.isfile(os.path.join(helpers, name)):
                continue
            if name.startswith('backends/') or os.path.isfile(os.path.join(root, 'backends', name)):
                report(path, n, name, 'a helper may not include a backend')
            elif os.path.isfile(os.path.join(src, name)) and \
                    not any(r.match(name) for r in HELPER_SRC_ALLOWED):
                report(path, n, name, 'a helper reaches into src/ only for util/ and the wire '
                       'contracts (mcp/proto.h, mcp/frames.h, proto/)')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..', '..'))
    root = os.path.abspath(parser.parse_args().root)
    if not os.path.isdir(os.path.join(root, 'src', 'util')):
        print(f'check_layers: {root} has no src/util: not a libagentsbx tree', file=sys.stderr)
        return 2
    violations = []

    def report(path, line, name, why):
        violations.append(f'{os.path.relpath(path, root)}:{line}: include "{name}": {why}')

    check_util(root, report)
    check_include(root, report)
    check_helpers(root, report)
    for v in violations:
        print(v)
    if violations:
        print(f'check_layers: {len(violations)} include(s) break the layers of '
              'docs/architecture.md', file=sys.stderr)
        return 1
    print('check_layers: src/util, include/ and helpers/ keep to their layers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
