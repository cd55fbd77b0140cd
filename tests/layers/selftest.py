#!/usr/bin/env python3
"""Proves check_layers.py can fail: builds small trees in a temporary folder, one clean and
one per kind of violation, and checks that the checker passes the clean ones and names the
file and the include of each broken one."""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_layers.py')

# A tree that keeps every rule: util includes itself and the public header, a helper uses
# util, and a public header includes its sibling.
CLEAN = {
    'include/agentsbx/agentsbx.h': '#include "backend.h"\n#include <stdint.h>\n',
    'include/agentsbx/backend.h': '#include <stddef.h>\n',
    'src/internal.h': '#include "util/json.h"\n',
    'src/mcp/proto.h': '',
    'src/util/json.h': '#include <agentsbx/agentsbx.h>\n',
    'src/util/json.c': '#include <stdio.h>\n#include "json.h"\n',
    'helpers/init/main.c': '#include "util/json.h"\n#include "mcp/proto.h"\n#include "peer.h"\n',
    'helpers/peer.h': '',
    'backends/common/launch.h': '#include "internal.h"\n',
}

# (what it shows, the files it adds or replaces, the "file:line: include" it must report or
# None for a tree that must pass).
CASES = [
    ('the clean tree', {}, None),
    ('util includes the core by bare name', {'src/util/json.c': '#include "internal.h"\n'},
     'src/util/json.c:1: include "internal.h"'),
    ('util climbs out with ../', {'src/util/json.c': '#include <stdio.h>\n#include "../internal.h"\n'},
     'src/util/json.c:2: include "../internal.h"'),
    ('util reaches a helper contract', {'src/util/x.c': '#include "mcp/proto.h"\n'},
     'src/util/x.c:1: include "mcp/proto.h"'),
    ('util includes itself the old way', {'src/util/x.c': '#include "util/json.h"\n'},
     'src/util/x.c:1: include "util/json.h"'),
    ('util reaches the core with <>', {'src/util/x.c': '#include <internal.h>\n'},
     'src/util/x.c:1: include "internal.h"'),
    ('util grows a subfolder', {'src/util/sub/x.c': ''}, 'src/util/sub/x.c:0: include ""'),
    ('the sandbox host side may not come back to util', {'src/util/sandbox.c': '#include "internal.h"\n'},
     'src/util/sandbox.c:1: include "internal.h"'),
    ('a public header includes the core',
     {'include/agentsbx/backend.h': '#include "../../src/internal.h"\n'},
     'include/agentsbx/backend.h:1: include "../../src/internal.h"'),
    ('a helper includes the core', {'helpers/init/main.c': '#include "internal.h"\n'},
     'helpers/init/main.c:1: include "internal.h"'),
    ('a helper includes a backend', {'helpers/init/main.c': '#include "backends/common/launch.h"\n'},
     'helpers/init/main.c:1: include "backends/common/launch.h"'),
]


def build(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)


def run_case(what, extra, expect):
    with tempfile.TemporaryDirectory() as root:
        build(root, {**CLEAN, **extra})
        r = subprocess.run([sys.executable, CHECKER, '--root', root], capture_output=True,
                           text=True, check=False)
    if expect is None:
        if r.returncode != 0:
            return f'{what}: expected a pass, got {r.returncode}:\n{r.stdout}{r.stderr}'
        return None
    if r.returncode != 1:
        return f'{what}: expected exit 1, got {r.returncode}:\n{r.stdout}{r.stderr}'
    if not any(line.startswith(expect + ':') for line in r.stdout.splitlines()):
        return f'{what}: the report does not name {expect}:\n{r.stdout}'
    return None


def main():
    failures = [f for f in (run_case(*c) for c in CASES) if f]
    for f in failures:
        print('FAIL', f)
    print(f'layers selftest: {len(CASES) - len(failures)}/{len(CASES)} cases as expected')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
