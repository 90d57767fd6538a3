# Sourced by the nightly scripts. `step NAME COMMAND...` runs the command, logs it to
# $OUT/NAME.log, and keeps the first failing exit status in $status.
status=0
step() {
  local name="$1"; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc"
  if ((rc != 0 && status == 0)); then status=$rc; fi
  return $rc
}
