#!/usr/bin/env bash
# Compiler launcher of the wgmma kernels (kernels/CMakeLists.txt, SAMEBITS_CUDA_WGMMA_ASYNC): runs
# the compile command it is given (another launcher such as ccache first, if any), passes its
# output on, and fails the compile where ptxas reports wgmma serialised ("wgmma.mma_async
# instructions are serialized due to ...": C7511, C7515 and kin). ptxas prints that as "info" and
# builds the kernel anyway, with a wait after every wgmma (no product overlaps the next one or the
# work beside it), and nothing but the build log tells. Causes seen: register pressure, an ordinary
# write to an accumulator while its wgmma is in flight, registers moved between two uses
# (bench/cuda/notes/prefill-time.md, 2026-12-04; bench/cuda/notes/prefill.md, 2026-12-03). Exit
# status: the compiler's, or 1.
out=$("$@" 2>&1)
rc=$?
[[ -n $out ]] && printf '%s\n' "$out" >&2
if ((rc == 0)) && grep -q 'wgmma.mma_async instructions are serialized' <<<"$out"; then
  echo "ptxas_guard: ptxas serialised wgmma (above); the build refuses it" \
    "(-DSAMEBITS_CUDA_WGMMA_ASYNC=OFF builds anyway)" >&2
  exit 1
fi
exit $rc
