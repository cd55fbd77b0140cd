#!/usr/bin/env python3
"""Keeps the Docker columns of seccomp_table.c in step with moby's default seccomp profile.

    seccomp-table.py PROFILE.json [TABLE.c] [--commit SHA] [--add NAME[=NR]]... [--write]
    seccomp-table.py PROFILE.json [TABLE.c] --markdown

PROFILE.json is moby's profiles/seccomp/default.json (github.com/moby/profiles since July
2025; vendored in moby/moby as vendor/github.com/moby/profiles/seccomp/default.json). For
every row of the table and every name in the profile, the Docker rule is derived from the
profile again; the "ours" column, the numbers and the comments are kept. A name the profile
gained gets a row that refuses it until someone decides otherwise (marked "decide"); a name
it lost becomes "not listed". Differences are printed on stderr; --write rewrites the table
(with --commit naming the profile's commit), --markdown prints the table of docs/security.md.
--add adds rows the profile does not name (a system call newer than it, say), refused.
"""
import argparse
import json
import re
import signal
import sys

TABLE = 'helpers/init/seccomp_table.c'
ROW = re.compile(r'^\tR\("([^"]+)", (\w+), (\w+), (NULL|"[^"]*"), (\w+)\),(?:\s*/\* (.*) \*/)?$')
BEGIN, END = '/* ROWS BEGIN', '/* ROWS END */'
ENOSYS = 38
EPERM = 1
# Docker's default capabilities (moby's daemon/pkg/oci/caps/defaults.go), as in the table.
DEFAULT_CAPS = {'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD',
                'CAP_NET_RAW', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETFCAP', 'CAP_SETPCAP',
                'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE'}


def derive(profile):
    """name -> (rule, detail) from the profile's syscalls list."""
    if profile.get('defaultAction') != 'SCMP_ACT_ERRNO' or \
            profile.get('defaultErrnoRet', EPERM) != EPERM:
        sys.exit('the profile\'s default is no longer ERRNO(EPERM): the table\'s premise changed')
    facts = {}
    for entry in profile['syscalls']:
        for name in entry['names']:
            facts.setdefault(name, []).append(entry)
    return {name: classify(name, entries) for name, entries in facts.items()}


def classify(name, entries):
    shapes = {}
    for e in entries:
        inc, exc = e.get('includes') or {}, e.get('excludes') or {}
        if set(inc) - {'caps', 'arches', 'minKernel'} or set(exc) - {'caps', 'arches'}:
            sys.exit(f'{name}: a condition this script does not know: {inc} {exc}')
        if e['action'] == 'SCMP_ACT_ERRNO':
            if e.get('errnoRet') != ENOSYS:
                sys.exit(f'{name}: answered errno {e.get("errnoRet")}: not a shape the table has')
            shapes['ENOSYS'] = None
        elif e['action'] != 'SCMP_ACT_ALLOW':
            sys.exit(f'{name}: action {e["action"]}: not a shape the table has')
        elif e.get('args'):
            shapes['ARGS'] = None
        elif not inc:
            shapes['ALLOW'] = None
        elif set(inc) == {'minKernel'}:
            shapes['KERNEL'] = inc['minKernel']
        elif set(inc) == {'arches'}:
            shapes['ARCH'] = ' '.join(sorted(set((shapes.get('ARCH') or '').split())
                                             | set(inc['arches'])))
        elif set(inc) == {'caps'}:
            shapes['CAPS'] = ' '.join(sorted(set((shapes.get('CAPS') or '').split())
                                             | set(inc['caps'])))
        else:
            sys.exit(f'{name}: includes {inc}: not a shape the table has')
    for rule in ('ALLOW', 'KERNEL', 'ARGS', 'ENOSYS', 'ARCH', 'CAPS'):
        if rule in shapes:
            detail = shapes[rule]
            if rule in ('ARGS', 'ENOSYS'):
                detail = shapes.get('CAPS')     # the capabilities that lift the rule
            return rule, detail
    sys.exit(f'{name}: no rule')


def read_table(path):
    lines = open(path).read().split('\n')
    start = next(i for i, l in enumerate(lines) if l.startswith(BEGIN))
    end = next(i for i, l in enumerate(lines) if l.startswith(END))
    rows = {}
    for l in lines[start + 1:end]:
        m = ROW.match(l)
        if not m:
            sys.exit(f'{path}: not a row: {l!r}')
        name, nr, rule, detail, ours, note = m.groups()
        rows[name] = {'nr': nr, 'rule': rule, 'detail': None if detail == 'NULL' else
                      detail.strip('"'), 'ours': ours, 'note': note}
    return lines, start, end, rows


def c_row(name, r):
    detail = 'NULL' if r['detail'] is None else f'"{r["detail"]}"'
    row = f'\tR("{name}", {r["nr"]}, {r["rule"]}, {detail}, {r["ours"]}),'
    return row + (f'\t/* {r["note"]} */' if r['note'] else '')


def merge(rows, docker, added):
    changes = []
    for name in sorted(set(rows) | set(docker) | set(added)):
        rule, detail = docker.get(name, ('UNLISTED', None))
        r = rows.get(name)
        if r is None:
            r = rows[name] = {'nr': added.get(name, '0'), 'ours': 'REFUSE',
                              'note': 'decide: new, refused until then', 'rule': rule,
                              'detail': detail}
            changes.append(f'{name}: new row, Docker {rule} {detail or ""}')
        elif (r['rule'], r['detail']) != (rule, detail):
            changes.append(f'{name}: Docker {r["rule"]} {r["detail"] or ""} -> {rule} '
                           f'{detail or ""}; ours stays {r["ours"]}: check it')
        r['rule'], r['detail'] = rule, detail
    return changes


DOCKER_TEXT = {
    'ALLOW': lambda d: 'allowed',
    'ARGS': lambda d: 'some arguments' + (f' ({d}: all)' if d else ''),
    'KERNEL': lambda d: f'allowed from kernel {d}',
    'ARCH': lambda d: 'allowed on ' + ', '.join(d.split()),
    'CAPS': lambda d: 'needs ' + ' or '.join(d.split()) +
    (', a default capability: allowed' if set(d.split()) & DEFAULT_CAPS else ''),
    'ENOSYS': lambda d: 'ENOSYS' + (f' ({d}: allowed)' if d else ''),
    'UNLISTED': lambda d: 'not listed: EPERM',
}
OURS_TEXT = {'ALLOW': 'allowed', 'ARGS': 'argument rule', 'REFUSE': 'EPERM', 'ENOSYS': 'ENOSYS',
             'EXEMPT': 'allowed: the kernel exempts it from seccomp'}


def markdown(rows):
    out = ['| System call | Docker\'s default profile | Ours |', '| --- | --- | --- |']
    for name, r in sorted(rows.items()):
        if r['rule'] == 'ALLOW' and r['ours'] == 'ALLOW':
            continue
        ours = OURS_TEXT[r['ours']] + (f' ({r["note"]})' if r['note'] else '')
        out.append(f'| `{name}` | {DOCKER_TEXT[r["rule"]](r["detail"])} | {ours} |')
    return '\n'.join(out)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('profile')
    ap.add_argument('table', nargs='?', default=TABLE)
    ap.add_argument('--commit')
    ap.add_argument('--add', action='append', default=[])
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--markdown', action='store_true')
    a = ap.parse_args()
    docker = derive(json.load(open(a.profile)))
    lines, start, end, rows = read_table(a.table)
    added = dict((x.split('=') + ['0'])[:2] for x in a.add)
    changes = merge(rows, docker, added)
    if a.markdown:
        print(markdown(rows))
        return
    for c in changes:
        print(c, file=sys.stderr)
    if not changes:
        print('the table matches the profile', file=sys.stderr)
    if a.write:
        body = [c_row(n, rows[n]) for n in sorted(rows)]
        text = '\n'.join(lines[:start + 1] + body + lines[end:])
        if a.commit:
            text = re.sub(r'(sbx_docker_profile_source\[\] =\s*"[^"]*?)[0-9a-f]{40}',
                          lambda m: m.group(1) + a.commit, text)
        open(a.table, 'w').write(text)


if __name__ == '__main__':
    main()
