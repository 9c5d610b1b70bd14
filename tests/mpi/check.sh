# Sourced by the MPI test scripts. check <description> <condition...> runs the condition and
# prints "ok: ..." or "FAILED: ..."; a failure sets fail=1, which the caller exits with.
check() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}
