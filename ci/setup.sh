#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that samebits' build and tests need: the one package list of
# the project, used by the README's two commands and by .ci/run. Installs only what is missing,
# says what it installs, and uses sudo only when not run as root. CUDA (nvcc) is optional and not
# installed here: the CUDA backend is built where nvcc is found (see README).
# usage: ci/setup.sh [main]   main: only what the README's main command builds (the samebits
#                             command); without it, everything (tests, benchmarks, fuzzing too).
# Exit status: 0 when every package is present afterwards; 1 when they cannot be installed; 2 for
# an unknown argument.
set -euo pipefail

packages=(
  # build tools
  build-essential cmake ninja-build pkg-config
  # libraries (find_package / pkg-config)
  libabsl-dev libxxhash-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libicu-dev libcpp-httplib-dev
)
case "${1:-all}" in
  main) ;;
  all)
    packages+=(
      # tests and benchmarks (chromium and libpng: the HTML report rendered and its screenshot read)
      libgtest-dev libgmock-dev libbenchmark-dev chromium libpng-dev
      # the tests of the Python tools under bench/ (bench/cuda/register_liveness.py, sass_mix.py)
      python3
      # GNU time: ci/gpu_sanitizers.sh's peak host memory per shard (its test asserts the column)
      time
      # fuzzing (ci/fuzz.sh, run by .ci/run): clang with libFuzzer, its sanitizer runtimes, OpenMP
      clang-14 libfuzzer-14-dev libclang-rt-14-dev libomp-14-dev
    )
    ;;
  *) echo "setup: unknown argument '$1' (usage: ci/setup.sh [main])" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "setup: no apt-get here (not Debian or Ubuntu); install these packages or their equivalents: ${missing[*]}" >&2
  exit 1
fi
as_root=()
if (($(id -u) != 0)); then
  if ! command -v sudo >/dev/null; then
    echo "setup: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  as_root=(sudo)
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
