#!/usr/bin/env python3
"""Register liveness of one kernel's machine code (SASS), for register-budget studies.

ptxas reports a kernel's register count and spills, not which values hold the registers at the
point of highest pressure. This reads the kernel's SASS (nvdisasm), computes which general
registers are live before every instruction (backward data flow over the branch graph), and prints
the peak, where it is, and which registers are live there. Under setmaxnreg it can restrict itself
to the consumer warpgroups' code (from setmaxnreg.inc to, not including, setmaxnreg.dec) or to the
producer's (what setmaxnreg.dec reaches: its highest register written must be below the count it
keeps).

    python3 bench/cuda/register_liveness.py KERNELS.cubin attention_prefill_kernelILi128ELb0ELb1E \
        --region consumer --top 5 --live
    ... --path 90      # from the peak, the shortest path to the next read of R90 (why it is live)

An nvdisasm as new as the toolkit that built the cubin should read it as it is (the H200 machine
has CUDA 13.0; not tried there yet). An older nvdisasm (Debian's nvidia-cuda-toolkit 11.8, non-free) refuses a CUDA 13 cubin for its
ELF header; --old-header rewrites the header to the older ABI first. 11.8 does not print the
instructions it does not know (VIADD and a few others: address gaps in its listing); those are
decoded here from the binary by their register fields (destination bits 16-23, sources 24-31 and,
for the register form, 32-39), and branch targets are decoded from every BRA's offset.
Approximations: the operand widths of a few wide forms (IMAD.WIDE, .64 / .128 loads and stores,
LDSM / STSM .2 / .4, CS2R, HGMMA accumulators and A fragments) are modelled; others count one
register each. tests/cli/test_sass_tools.cpp checks the analysis on a listing it writes.
bench/cuda/sass_mix.py reads cubins through this file (read_kernel, parse).
"""
import argparse
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile


def tool():
    """The script the user ran (this one, or another that imports it), for its error lines."""
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def elf_sections(data):
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    secs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx][4]
    name = lambda o: data[names + o:data.index(b'\0', names + o)].decode()
    return {name(s[0]): data[s[4]:s[4] + s[5]] for s in secs}


def disassemble(cubin, contents, nvdisasm, old_header):
    path = cubin
    if old_header:  # the pre-CUDA-12 ELF ABI: version 7, e_flags sm_90 | 64-bit | unified texture mode
        data = bytearray(contents)
        data[8] = 7
        struct.pack_into('<I', data, 48, 0x005a055a)
        tmp = tempfile.NamedTemporaryFile(suffix='.cubin', delete=False)
        tmp.write(data)
        tmp.close()
        path = tmp.name
    try:
        run = subprocess.run([nvdisasm, '-c', '-gi', path], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f'{tool()}: cannot run {nvdisasm}: {e.strerror}')
    finally:
        if path != cubin:
            os.remove(path)
    if run.returncode != 0:
        hint = '' if old_header else ' (an nvdisasm older than the cubin\'s toolkit: try --old-header)'
        sys.exit(f'{tool()}: {nvdisasm} failed: {run.stderr.strip()}{hint}')
    return run.stdout


def kernel_listing(sass, pattern):
    for part in re.split(r'\n\s*\.section\s+', sass):
        name = part.split(',')[0].strip()
        if name.startswith('.text') and pattern in name:
            return name[len('.text.'):], part
    sys.exit(f'{tool()}: no kernel whose name contains {pattern!r}')


INSTR = re.compile(r'\s*/\*([0-9a-f]+)\*/\s+(@!?U?P[T0-9]\s+)?([A-Za-z0-9_.]+)\s*(.*?)\s*;')
NO_REGISTER_DEST = {'ST', 'STS', 'STG', 'STL', 'STSM', 'RED', 'BRA', 'BAR', 'EXIT', 'WARPGROUP', 'MEMBAR', 'FENCE', 'ERRBAR',
                    'CGAERRBAR', 'CCTL', 'BSSY', 'BSYNC', 'LDGSTS', 'DEPBAR', 'NOP', 'WARPSYNC', 'YIELD', 'RET', 'CALL',
                    'LDGDEPBAR', 'SYNCS', 'R2UR', 'S2UR', 'NANOSLEEP', 'R2P', 'ISETP', 'FSETP', 'PLOP3', 'HSETP2'}


def split_operands(text):
    ops, depth, cur = [], 0, ''
    for ch in text:
        depth += ch == '['
        depth -= ch == ']'
        if ch == ',' and depth == 0:
            ops.append(cur.strip())
            cur = ''
        else:
            cur += ch
    return ops + ([cur.strip()] if cur.strip() else [])


def registers(operand, width=1):
    out = []
    for r, is64 in re.findall(r'(?<![UA-Z_])R(\d+)(\.64)?', operand):
        out += range(int(r), int(r) + (2 if is64 else width))
    return out


def access_width(op):
    if op.startswith(('LDSM', 'STSM')):  # ldmatrix / stmatrix: .4 or .2 matrices, a register each
        return {'4': 4, '2': 2}.get(op.split('.')[-1], 1)
    return 4 if '.128' in op else 2 if '.64' in op else 1


def defs_and_uses(op, operands):
    """(registers written, registers read) of one instruction."""
    base = op.split('.')[0]
    ops = split_operands(operands)
    if base == 'HGMMA':  # D (N/2 registers), [A fragment (4)], B descriptor, C (= D unless RZ / !UPT)
        d0 = int(ops[0][1:])
        d = list(range(d0, d0 + int(re.search(r'64x(\d+)x', op).group(1)) // 2))
        u = list(range(int(ops[1][1:]), int(ops[1][1:]) + 4)) if re.fullmatch(r'R\d+', ops[1]) else []
        overwrite = 'RZ' in ops[2:] or any('!UPT' in o for o in ops)
        return d, u + ([] if overwrite else d)
    if base in NO_REGISTER_DEST or base.startswith('U'):
        store = base in ('ST', 'STS', 'STG', 'STL', 'STSM', 'RED')
        return [], [r for o in ops for r in registers(o, access_width(op) if store and not o.startswith('[') else 1)]
    k = 0
    while k < len(ops) and re.fullmatch(r'!?U?P[T0-9]', ops[k]):  # predicate destinations come first
        k += 1
    dest = ops[k] if k < len(ops) else 'RZ'
    width = 1
    if base in ('LDG', 'LDS', 'LDL', 'LD', 'LDC', 'LDSM', 'ATOMG', 'ATOMS', 'MOV', 'SHFL'):
        width = access_width(op)
    if (base == 'CS2R' and '.32' not in op) or (base == 'IMAD' and '.WIDE' in op):
        width = 2
    d = list(range(int(dest[1:].split('.')[0]), int(dest[1:].split('.')[0]) + width)) if re.match(r'R\d', dest) else []
    rest = ops[k + 1:]
    u = []
    for j, o in enumerate(rest):  # IMAD.WIDE's addend is a register pair
        u += registers(o, 2 if base == 'IMAD' and '.WIDE' in op and j == len(rest) - 1 else 1)
    return d, u


def parse(listing, text, chains=None):
    """Instructions by address: (guard, opcode, operands, source line). With `chains` (a dict),
    also each instruction's whole -lineinfo location, innermost first: [(file name, line), ...]."""
    found, where, fresh, chain = {}, '', True, []
    for line in listing.split('\n'):
        if '//##' in line:  # a group of these lines: the innermost (inlined) location first
            m = re.search(r'File "([^"]*)", line (\d+)', line)
            if fresh:
                chain = []
            if m:
                if fresh:
                    where = m.group(1).split('/')[-1] + ':' + m.group(2)
                chain.append((m.group(1).split('/')[-1], int(m.group(2))))
            fresh = False
            continue
        fresh = True
        m = INSTR.match(line)
        if m:
            found[int(m.group(1), 16)] = ((m.group(2) or '').strip(), m.group(3), m.group(4), where)
            if chains is not None:
                chains[int(m.group(1), 16)] = chain
    for a in range(0, len(text), 16):  # what the disassembler left out
        if a in found:
            continue
        lo, = struct.unpack_from('<Q', text, a)
        opcode, form, guard = lo & 0x1ff, (lo >> 9) & 7, (lo >> 12) & 0xf
        reg = lambda r: 'RZ' if r == 255 else f'R{r}'
        ops = [reg((lo >> 16) & 0xff), reg((lo >> 24) & 0xff)] + ([reg((lo >> 32) & 0xff)] if form == 1 else [])
        pred = '' if guard == 7 else (f'@!P{guard & 7}' if guard & 8 else f'@P{guard}')
        found[a] = (pred, f'OP{opcode:03x}', ', '.join(ops), 'undecoded')
    return found


def branch_target(text, a):
    """A BRA's target: offset bits 16-23 (in 4-byte units) plus bits 24-63 (signed), from the next
    instruction."""
    lo, = struct.unpack_from('<Q', text, a)
    high = lo >> 24
    if high >> 39:
        high -= 1 << 40
    return a + 16 + high + ((lo >> 16) & 0xff) * 4


def branch_graph(by_addr, text):
    """(addresses in order, index of each address, successors of each index): a branch goes to its
    target, and on to the next instruction where it is guarded; an unguarded EXIT or RET ends a path."""
    order = sorted(by_addr)
    index = {a: i for i, a in enumerate(order)}
    succ = []
    for i, a in enumerate(order):
        guard, op, _, _ = by_addr[a]
        base = op.split('.')[0]
        nxt = [i + 1] if i + 1 < len(order) else []
        if base in ('BRA', 'JMP'):
            t = branch_target(text, a)
            succ.append(([index[t]] if t in index else []) + (nxt if guard else []))
        elif base in ('EXIT', 'RET') and not guard:
            succ.append([])
        else:
            succ.append(nxt)
    return order, index, succ


def add_kernel_arguments(ap):
    """The cubin, the kernel and the disassembler: the arguments of read_kernel."""
    ap.add_argument('cubin')
    ap.add_argument('kernel', help='a substring of the kernel\'s mangled name')
    ap.add_argument('--nvdisasm', default='nvdisasm')
    ap.add_argument('--old-header', action='store_true', help='rewrite the ELF header for a pre-CUDA-12 nvdisasm')


def read_kernel(args):
    """(mangled name, its SASS listing, its .text bytes); one line and exit 1 where that fails."""
    try:
        cubin = open(args.cubin, 'rb').read()
    except OSError as e:
        sys.exit(f'{tool()}: cannot read the cubin {args.cubin}: {e.strerror}')
    name, listing = kernel_listing(disassemble(args.cubin, cubin, args.nvdisasm, args.old_header), args.kernel)
    return name, listing, elf_sections(cubin)['.text.' + name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_kernel_arguments(ap)
    ap.add_argument('--region', choices=('all', 'consumer', 'producer'), default='all')
    ap.add_argument('--top', type=int, default=5)
    ap.add_argument('--live', action='store_true', help='the registers live at the peak, as ranges')
    ap.add_argument('--path', type=int, metavar='R', help='from the peak to the next read of register R')
    ap.add_argument('--who', action='store_true',
                    help='for each register live there, the instructions of the region writing it (with -lineinfo: their lines)')
    ap.add_argument('--at', type=lambda x: int(x, 16), metavar='ADDR',
                    help='instead of the peak, the instruction at this (hex) address')
    args = ap.parse_args()
    name, listing, text = read_kernel(args)
    by_addr = parse(listing, text)
    order, index, succ = branch_graph(by_addr, text)
    n = len(order)
    defs, kills, uses = [], [], []
    for a in order:
        guard, op, operands, _ = by_addr[a]
        d, u = defs_and_uses(op, operands)
        defs.append(d)
        kills.append(0 if guard else sum(1 << r for r in set(d)))  # a guarded write may not happen
        uses.append(sum(1 << r for r in set(u)))
    live = [0] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            out = 0
            for s in succ[i]:
                out |= live[s]
            v = (out & ~kills[i]) | uses[i]
            if v != live[i]:
                live[i], changed = v, True

    region = set(range(n))
    if args.region != 'all':
        # consumer: from setmaxnreg.inc (TRY_ALLOC) to, not including, setmaxnreg.dec; producer:
        # what setmaxnreg.dec (DEALLOC) reaches, which must fit the registers it leaves.
        mark, stop = ('TRY_ALLOC', 'DEALLOC') if args.region == 'consumer' else ('DEALLOC', None)
        start = next(i for i, a in enumerate(order) if mark in by_addr[a][1])
        region, stack = set(), [start]
        while stack:
            i = stack.pop()
            if i in region or (stop is not None and stop in by_addr[order[i]][1]):
                continue
            region.add(i)
            stack += succ[i]
    count = lambda v: bin(v).count('1')
    peak = sorted(region, key=lambda i: -count(live[i]))
    if args.at is not None:
        peak = [index[args.at]] + peak
    highest = max((r for i in region for r in defs[i]), default=-1)
    print(f'{name}: {len(region)} instructions, highest register written R{highest}, '
          f'peak {count(live[peak[0]])} live registers')
    for i in peak[:args.top]:
        guard, op, operands, where = by_addr[order[i]]
        print(f'  {count(live[i]):4d} live at {order[i]:#06x} {guard} {op} {operands[:60]}  ({where})')
    if args.live:
        regs = [r for r in range(256) if live[peak[0]] >> r & 1]
        ranges, first = [], regs[0]
        for prev, r in zip(regs, regs[1:] + [None]):
            if r != prev + 1:
                ranges.append(f'R{first}' + (f'-R{prev}' if prev != first else ''))
                first = r
        print(f'  live at {order[peak[0]]:#06x}:', ' '.join(ranges))
    if args.who:  # every instruction of the region that writes the register, by source line
        at = peak[0]
        for r in range(256):
            if not live[at] >> r & 1:
                continue
            writers = collections.Counter(by_addr[order[j]][3] + ' ' + by_addr[order[j]][1].split('.')[0]
                                          for j in region if r in defs[j])
            print(f'  R{r:<3}', ', '.join(f'{w} x{c}' if c > 1 else w for w, c in writers.most_common(4)))
    if args.path is not None:
        from collections import deque
        p, reg = peak[0], args.path
        prev, queue, hit = {p: None}, deque([p]), None
        while queue:
            i = queue.popleft()
            if i != p and uses[i] >> reg & 1:
                hit = i
                break
            if i != p and kills[i] >> reg & 1:
                continue
            for s in succ[i]:
                if s not in prev:
                    prev[s] = i
                    queue.append(s)
        if hit is None:
            print(f'  R{reg} is not read again from the peak')
            return
        path = []
        while hit is not None:
            path.append(hit)
            hit = prev[hit]
        for i in reversed(path):  # the branches taken and the read
            guard, op, operands, _ = by_addr[order[i]]
            jumped = prev[i] is not None and prev[i] != i - 1
            if op.startswith('BRA') or jumped or i == path[0]:
                print(f'  {order[i]:#06x} {guard} {op} {operands[:60]}' + ('  <- jumped here' if jumped else ''))


if __name__ == '__main__':
    main()
