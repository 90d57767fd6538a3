#!/usr/bin/env bash
# The README's two commands on a fresh Debian 12 machine, timed step by step: a pristine minbase
# root made by debootstrap (not timed: it stands for the new machine), a fresh clone of the
# repository's main branch, no compiler cache, the steps pinned to the cores in CPUS. Each
# command is taken from README.md as it is in the clone and cut at its "&&" into steps, run in
# order as a new user would (the first command, then the test command).
#
# usage: sudo bench/fresh_machine.sh [REPOSITORY [ROOT_DIR]]
#   REPOSITORY  what to clone (default: this repository); its branch main is cloned
#   ROOT_DIR    a new directory for the root (default: /tmp/samebits-fresh-<time>)
#   CPUS=0,1    the cores every step runs on (taskset; nproc inside then reports their count)
#   MIRROR=...  Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   ONLY_MAIN=1 time the README's first command only
# Needs root, debootstrap and the network (apt). Prints one line per step (seconds, exit status,
# load averages before and after) and the total per command; the logs stay in ROOT_DIR/root/logs.
# For figures worth quoting, run it on a machine with nothing else running.
set -euo pipefail

repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
root=${2:-/tmp/samebits-fresh-$(date +%s)}
cpus=${CPUS:-0,1}
mirror=${MIRROR:-http://deb.debian.org/debian}

if (($(id -u) != 0)); then echo "fresh_machine.sh: run as root (debootstrap, chroot)" >&2; exit 2; fi
if [[ -e $root ]]; then echo "fresh_machine.sh: $root exists; give a new directory" >&2; exit 2; fi
command -v debootstrap >/dev/null || { echo "fresh_machine.sh: apt-get install debootstrap first" >&2; exit 2; }

echo "root: $root; cores: $cpus; repository: $repo"
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$root.debootstrap.log" 2>&1 ||
  { echo "fresh_machine.sh: debootstrap failed, see $root.debootstrap.log" >&2; exit 1; }
git clone -q --branch main --no-hardlinks "$repo" "$root/root/samebits"
echo "commit: $(git -C "$root/root/samebits" log -1 --format='%h %s' | cut -c1-100)"
mkdir -p "$root/root/logs"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t sysfs sysfs "$root/sys"
trap 'umount "$root/sys" "$root/dev/pts" "$root/dev" "$root/proc"' EXIT

readme="$root/root/samebits/README.md"
main_command=$(grep -m1 -E '^    ci/setup.sh( main)? && cmake --preset main ' "$readme" | sed 's/^    //')
test_command=$(grep -m1 -E '^    ci/setup.sh && cmake --preset default ' "$readme" | sed 's/^    //')
[[ -n $main_command && -n $test_command ]] || { echo "fresh_machine.sh: README's commands not found" >&2; exit 1; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# run_command NAME COMMAND: its steps one after another in the root, timed; stops at a failure.
run_command() {
  local name=$1 command=$2 total=0 i=0 step rc start seconds before
  echo "== $name: $command"
  while IFS= read -r step; do
    i=$((i + 1))
    before=$(loadavg)
    start=$(date +%s.%N)
    set +e
    taskset -c "$cpus" chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CCACHE_DISABLE=1 \
      bash -c "cd /root/samebits && $step" > "$root/root/logs/$name.$i.log" 2>&1
    rc=$?
    set -e
    seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
    total=$(awk -v a="$total" -v b="$seconds" 'BEGIN{printf "%.1f", a + b}')
    printf '%-8s %7s s  rc=%-3s load %s -> %s  %s\n' "$name" "$seconds" "$rc" "$before" "$(loadavg)" "$step"
    if ((rc != 0)); then
      echo "   step failed; last lines of $root/root/logs/$name.$i.log:"; tail -5 "$root/root/logs/$name.$i.log"
      return 1
    fi
  done <<< "${command// && /$'\n'}"
  echo "$name total: $total s"
}

run_command main "$main_command"
grep -E '^(mode|default|invariant) ' "$root/root/logs/main.4.log" || true
if [[ -z ${ONLY_MAIN:-} ]]; then
  run_command tests "$test_command"
  tail -3 "$root/root/logs/tests.4.log"
fi
