#!/usr/bin/env python3
"""Instruction mix of one kernel's machine code (SASS) by source line, for instruction-count studies.

ncu counts the instructions a kernel executes; this counts, without a GPU, the instructions that
a stretch of its machine code holds, grouped by the source line they come from, to see where a
loop's instructions go and what a change removes before any device time is spent. The loops
(backward branches) come first:

    python3 bench/cuda/sass_mix.py KERNELS.cubin attention_prefill_kernelILi128ELb0ELb1E --loops
    ... --loop 0x4770-0x9020 --group attention_prefill.cu:440-580

--loop HEAD-BRANCH takes the loop's own instructions: those on a path from its head back to its
branch (the natural loop), not code the compiler placed inside its address range that leaves the
loop for good (error paths, other lambdas' cold code); --range LO-HI takes every address between.
--group FILE[:FIRST-LAST] files each instruction under the innermost frame of its inlining chain
(-lineinfo) that is in FILE (and within those lines): a lambda's or a function's line in the loop,
not the header lines its inlined helpers come from. Compile with -lineinfo; without it every
instruction falls under "no line". Straight-line counts: the instructions one trip around the loop
executes depend on its branches (e.g. an edge-case softmax beside the interior one), so read the
table per line. The cubin, the disassembler and --old-header are as for register_liveness.py.
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import register_liveness as rl  # noqa: E402


def address_range(text):
    m = re.fullmatch(r'(0x[0-9a-fA-F]+|[0-9a-fA-F]+)-(0x[0-9a-fA-F]+|[0-9a-fA-F]+)', text)
    if not m:
        raise argparse.ArgumentTypeError(f'{text!r} is not LO-HI (hex addresses)')
    return int(m.group(1), 16), int(m.group(2), 16)


def group_spec(text):
    m = re.fullmatch(r'([^:]+)(?::(\d+)-(\d+))?', text)
    if not m:
        raise argparse.ArgumentTypeError(f'{text!r} is not FILE or FILE:FIRST-LAST')
    return m.group(1), int(m.group(2) or 0), int(m.group(3) or 1 << 30)


def loops(text, by_addr):
    """(head, branch) of every backward branch, the shortest first."""
    found = []
    for a, (_, op, _, _) in by_addr.items():
        if op.split('.')[0] in ('BRA', 'JMP'):
            t = rl.branch_target(text, a)
            if t <= a:
                found.append((t, a))
    return sorted(found, key=lambda x: x[1] - x[0])


def loop_body(order, index, succ, head, branch):
    """Addresses on a path from `head` to `branch` (its back edge): `branch` and every instruction
    that reaches it without passing through `head`, and `head`."""
    pred = collections.defaultdict(list)
    for i, ss in enumerate(succ):
        for t in ss:
            pred[t].append(i)
    seen, stack = {index[head], index[branch]}, [index[branch]]
    while stack:
        for p in pred[stack.pop()]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return {order[i] for i in seen}


def loops_from(text, by_addr, head):
    """The branches of the loops whose head is `head`."""
    return {branch for h, branch in loops(text, by_addr) if h == head}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    rl.add_kernel_arguments(ap)
    ap.add_argument('--loops', action='store_true', help='the loops (backward branches) and what they hold')
    ap.add_argument('--loop', type=address_range, metavar='HEAD-BRANCH',
                    help='the instruction mix of this loop (as --loops lists it): its paths only')
    ap.add_argument('--range', type=address_range, metavar='LO-HI', help='the instruction mix of these addresses')
    ap.add_argument('--group', type=group_spec, metavar='FILE[:FIRST-LAST]',
                    help='file instructions under their innermost frame in FILE (default: their innermost frame)')
    ap.add_argument('--source', metavar='PATH', help='the grouped file, to print each line\'s text')
    args = ap.parse_args()
    if not args.loops and args.range is None and args.loop is None:
        ap.error('say --loops, --loop HEAD-BRANCH or --range LO-HI')
    if args.range is not None and args.loop is not None:
        ap.error('--loop and --range are two ways to choose the instructions: say one')
    name, listing, text = rl.read_kernel(args)
    chains = {}
    by_addr = rl.parse(listing, text, chains)
    print(f'{name}: {len(by_addr)} instructions')
    if args.loops:
        for head, branch in loops(text, by_addr):
            body = [a for a in by_addr if head <= a <= branch]
            ops = collections.Counter(by_addr[a][1].split('.')[0] for a in body)
            print(f'  loop {head:#07x}-{branch:#07x}: {len(body):5d} instructions, '
                  f'HGMMA {ops["HGMMA"]}, MUFU {ops["MUFU"]}, BAR {ops["BAR"]}, SYNCS {ops["SYNCS"]}')
    if args.range is None and args.loop is None:
        return
    lo, hi = args.range or args.loop
    if args.loop:
        order, index, succ = rl.branch_graph(by_addr, text)
        if lo not in index or hi not in index or hi not in loops_from(text, by_addr, lo):
            sys.exit(f'sass_mix: no loop {lo:#x}-{hi:#x} (a backward branch at {hi:#x} to {lo:#x}: see --loops)')
        chosen = loop_body(order, index, succ, lo, hi)
    else:
        chosen = {a for a in by_addr if lo <= a <= hi}
    source = []
    if args.source:
        try:
            source = open(args.source).read().split('\n')
        except OSError as e:
            sys.exit(f'sass_mix: cannot read the source {args.source}: {e.strerror}')
    groups = collections.defaultdict(collections.Counter)
    for a in sorted(chosen):
        chain = chains.get(a, [])
        if args.group:
            file, first, last = args.group
            frames = [f for f in chain if f[0] == file and first <= f[1] <= last]
        else:
            frames = chain
        key = frames[0] if frames else ('', 0)
        groups[key][by_addr[a][1].split('.')[0]] += 1
    total = sum(sum(c.values()) for c in groups.values())
    within = sum(1 for a in by_addr if lo <= a <= hi)
    print(f'  {lo:#07x}-{hi:#07x}: {total} instructions' + (f' on its paths ({within} in its range)' if args.loop else ''))
    for key in sorted(groups):
        c = groups[key]
        where = f'{key[0]}:{key[1]}' if key[0] else 'no line' if not args.group else 'elsewhere'
        line = source[key[1] - 1].strip()[:56] if source and key[0] and 0 < key[1] <= len(source) else ''
        ops = ' '.join(f'{op}' + (f' x{n}' if n > 1 else '') for op, n in c.most_common(6))
        print(f'  {where:>28} {sum(c.values()):5d}  {line:56s}  {ops}')


if __name__ == '__main__':
    main()
