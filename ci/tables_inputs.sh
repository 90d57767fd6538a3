# Sourced by ci/gpu_one_call.sh and ci/gpu_device_check.sh: the one place that decides which of a
# call's logs bench/cuda/one_call_tables.py reads.
#   table_input FLAG FILE   adds FILE under FLAG (--gpu, --sdpa, --matmul, --gpu-tests, --sanitizers,
#                           or attention: a bench_cuda_attention log) where FILE holds what the tables
#                           read from it. A step cut short or failed early leaves a log without it;
#                           left out, that input is missing from the tables instead of failing them.
#   write_tables MD JSON    the tables of the inputs added into MD (and JSON); no attention log: MD
#                           says why there are none. Status 1 only when one_call_tables.py fails.
#                           The inputs are then forgotten: a later pass adds them again.
tables_args=() tables_logs=()
table_input() {
  local flag=$1 file=$2
  case $flag in
    --gpu | --sdpa) [[ -s $file ]] ;;
    --matmul) grep -qs "geometric-mean throughput ratio" "$file" ;;
    --gpu-tests) grep -qs '^\[       OK \]\|^\[  FAILED  \]' "$file" ;;
    --sanitizers) grep -qs "test cases clean" "$file" ;;
    attention) grep -qs "device copy bandwidth" "$file" ;;
    *) echo "table_input: $flag is not an input of the tables" >&2; return 2 ;;
  esac || return 0
  if [[ $flag == attention ]]; then tables_logs+=("$file"); else tables_args+=("$flag" "$file"); fi
}
write_tables() {
  local md=$1 json=$2 rc=0
  if ((${#tables_logs[@]} == 0)); then
    echo "no bench_cuda_attention log with its table: no tables" >"$md"
  else
    python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/cuda/one_call_tables.py" --json "$json" \
      "${tables_args[@]}" "${tables_logs[@]}" >"$md" 2>&1 || rc=1
  fi
  tables_args=() tables_logs=()
  return $rc
}
