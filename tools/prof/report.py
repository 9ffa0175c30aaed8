#!/usr/bin/env python3
"""report.py: symbolizes and sums the samples of tools/prof/sampler.cpp.

    python3 tools/prof/report.py SAMPLES [--lib DIR]... [--thread PREFIX] [--top N] [--depth N]

Each module+offset frame is resolved with addr2line against a file of that name found under
one of the --lib folders (the same build the samples came from); frames of modules not found
keep their module name. Prints, per thread name, its share of the samples; then the functions
by self samples (the innermost frame) and by total samples (anywhere in the stack), and the
most frequent callers of the hottest self functions.
"""
import argparse
import collections
import os
import subprocess
import sys


def find_modules(dirs):
    found = {}
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                found.setdefault(f, os.path.join(root, f))
    return found


def symbolize(frames, modules):
    by_module = collections.defaultdict(set)
    for fr in frames:
        mod, _, off = fr.rpartition('+')
        if mod in modules:
            by_module[mod].add(off)
    names = {}
    for mod, offs in by_module.items():
        offs = sorted(offs)
        out = subprocess.run(['addr2line', '-f', '-C', '-e', modules[mod]], input='\n'.join(offs) + '\n',
                             capture_output=True, text=True).stdout.splitlines()
        for i, off in enumerate(offs):
            fn = out[2 * i] if 2 * i < len(out) else '??'
            names[mod + '+' + off] = fn if fn != '??' else mod + '+' + off
    return {fr: names.get(fr, fr.rpartition('+')[0] or fr) for fr in frames}


def short(fn, width=110):
    return fn if len(fn) <= width else fn[:width - 3] + '...'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('samples')
    ap.add_argument('--lib', action='append', default=[])
    ap.add_argument('--thread', default='')
    ap.add_argument('--top', type=int, default=30)
    ap.add_argument('--depth', type=int, default=4, help='caller frames shown for the hottest')
    a = ap.parse_args()

    rows = []
    with open(a.samples) as f:
        header = f.readline().strip()
        for line in f:
            thread, rest = line[:15].rstrip(), line[16:].rstrip('\n')  # the name: 15 characters, then ';'
            rows.append((thread, rest.split()))
    modules = find_modules(a.lib)
    names = symbolize({fr for _, st in rows for fr in st}, modules)
    print(header)
    threads = collections.Counter(t for t, _ in rows)
    print('\nsamples by thread name:')
    for t, n in threads.most_common():
        print('  %6d %5.1f%%  %s' % (n, 100.0 * n / len(rows), t))
    rows = [(t, [names[fr] for fr in st]) for t, st in rows if t.startswith(a.thread)]
    total = len(rows)
    if not total:
        return
    self_c, incl_c = collections.Counter(), collections.Counter()
    callers = collections.defaultdict(collections.Counter)
    for _, st in rows:
        if not st:
            continue
        self_c[st[0]] += 1
        for fn in set(st):
            incl_c[fn] += 1
        callers[st[0]][' <- '.join(st[1:1 + a.depth])] += 1
    print('\n%d samples%s; self:' % (total, ' of threads ' + a.thread + '*' if a.thread else ''))
    for fn, n in self_c.most_common(a.top):
        print('  %6d %5.1f%%  %s' % (n, 100.0 * n / total, short(fn)))
    print('\ntotal (anywhere in the stack):')
    for fn, n in incl_c.most_common(a.top):
        print('  %6d %5.1f%%  %s' % (n, 100.0 * n / total, short(fn)))
    print('\ncallers of the hottest:')
    for fn, _ in self_c.most_common(min(a.top, 12)):
        print('  ' + short(fn))
        for c, n in callers[fn].most_common(3):
            print('      %6d  <- %s' % (n, short(c, 160)))


if __name__ == '__main__':
    sys.exit(main())
