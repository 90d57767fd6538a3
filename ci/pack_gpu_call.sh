#!/usr/bin/env bash
# Packs what ci/gpu_one_call.sh runs into one archive for the device machine (which has no Debian
# packages, and takes at most 64 MiB of carried files):
#   ci/pack_gpu_call.sh BUILD_DIR ARCHIVE.tar.xz
# BUILD_DIR is a build tree of the cuda preset (or any with SAMEBITS_CUDA on) in which
#   cmake --build BUILD_DIR --target bench_cuda_attention bench_cuda_matmul gpu_tests samebits
# has run. The archive holds bm/: the four executables, stripped (debug info is most of their size),
# and bm/lib/: the shared libraries they load from this machine's packages, without the C/C++
# runtime and CUDA's own libraries (the device machine's are newer). On the device,
# ci/gpu_one_call_packed.sh ARCHIVE OUT runs the call from it. The archive is written whole or not
# at all. PACK_MAX_MIB (default 64): the largest archive allowed; PACK_XZ_LEVEL (default 6).
# Exit status: 0 written; 1 a step failed (strip, tar, xz) or the archive is too large; 2 bad
# arguments or a missing executable.
set -euo pipefail
usage="usage: ci/pack_gpu_call.sh BUILD_DIR ARCHIVE.tar.xz"
(($# == 2)) || { echo "pack_gpu_call: $usage" >&2; exit 2; }
build=$1 archive=$2
max_mib=${PACK_MAX_MIB:-64} level=${PACK_XZ_LEVEL:-6}
[[ $max_mib =~ ^[0-9]+$ ]] || { echo "pack_gpu_call: PACK_MAX_MIB $max_mib: a whole number of MiB" >&2; exit 2; }
[[ $level =~ ^[0-9]$ ]] || { echo "pack_gpu_call: PACK_XZ_LEVEL $level: a digit, 0 to 9" >&2; exit 2; }
[[ -d $build ]] || { echo "pack_gpu_call: BUILD_DIR $build is not a folder" >&2; exit 2; }
[[ $archive == *.tar.xz ]] || { echo "pack_gpu_call: ARCHIVE $archive: the name must end in .tar.xz" >&2; exit 2; }
[[ -d $(dirname "$archive") ]] || { echo "pack_gpu_call: ARCHIVE $archive: no folder $(dirname "$archive")" >&2; exit 2; }

# Where the cuda preset's tree puts each executable.
executables=(bench/cuda/bench_cuda_attention bench/cuda/bench_cuda_matmul tests/gpu/gpu_tests harness/samebits)
for e in "${executables[@]}"; do
  [[ -x $build/$e ]] || {
    echo "pack_gpu_call: $build/$e: no such executable (cmake --build $build --target ${executables[*]##*/})" >&2
    exit 2
  }
done

stage=$(mktemp -d)
partial="$archive.partial.$$"
trap 'rm -rf "$stage"; rm -f "$partial"' EXIT
mkdir -p "$stage/bm/lib"
is_elf() { [[ $(head -c 4 "$1" | od -An -c | tr -d ' ') == '177ELF' ]]; }
# (the list of bundle-libs in the shared tools: what the device machine has of its own)
system_libs='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda|libcublas|libcudart|libnvrtc|libnccl|libcurand|libcusparse|libcusolver|libcufft|libnvJitLink)'
for e in "${executables[@]}"; do
  copy="$stage/bm/$(basename "$e")"
  cp "$build/$e" "$copy"
  is_elf "$copy" || continue  # (a stand-in script is packed as it is)
  strip "$copy" || { echo "pack_gpu_call: strip $build/$e failed" >&2; exit 1; }
  ldd "$build/$e" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $system_libs ]] || cp -Lu "$path" "$stage/bm/lib/$name"
  done
done

tar -C "$stage" -cf - bm | xz -T0 "-$level" >"$partial" || { echo "pack_gpu_call: tar | xz failed" >&2; exit 1; }
bytes=$(stat -c %s "$partial")
if ((bytes > max_mib * 1048576)); then
  echo "pack_gpu_call: $archive would be $((bytes / 1048576)) MiB, over PACK_MAX_MIB=$max_mib (the device's carry limit): nothing written" >&2
  exit 1
fi
mv "$partial" "$archive"
echo "pack_gpu_call: $archive, $((bytes / 1024)) KiB: ${executables[*]##*/}, $(ls "$stage/bm/lib" | wc -l) libraries"
