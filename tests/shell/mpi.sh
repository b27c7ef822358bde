# mpi.sh — what the mpirun tests share (sourced after tap.sh, from the repository root):
#   mpi_setup WHAT TIMEOUT   skips the whole script (one TAP line, exit 0) without mpirun or
#                            $BUILD/libember_mpi.so; else sets the run-as-root variables, turns the
#                            sanitizer build's leak check off (it would report MPI's own
#                            allocations; the ranks only need to run) and MPIRUN=(timeout ...
#                            mpirun --oversubscribe), so a hang fails instead of blocking.
#   relay_ranks NAME MIN CMD...
#                            runs a rank program (tests/shell/ranks_tap.lua's TAP: rank 0 prints a
#                            line per group, failures go to stderr), relays its lines, then checks
#                            that it exited 0 and printed its plan with at least MIN groups.
# Needs EMBER, BUILD and tmp set by the caller.
mpi_setup() {
    if ! command -v mpirun >/dev/null 2>&1 || [ ! -e "$BUILD/libember_mpi.so" ]; then
        echo "ok 1 - $1 # SKIP no mpirun or no $BUILD/libember_mpi.so (Debian: openmpi-bin libopenmpi-dev)"
        exit 0
    fi
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
    MPIRUN=(timeout "$2" mpirun --oversubscribe)
}

relay_ranks() {
    local name=$1 min=$2 rc line plan
    shift 2
    "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    while read -r line; do
        case "$line" in
            "ok "*) ok "${line#ok [0-9]* - }" ;;
            "not ok "*) not_ok "${line#not ok [0-9]* - }" "$(grep "^#" "$tmp/err" | head -20)" ;;
        esac
    done < "$tmp/out"
    plan=$(grep -cE '^(ok|not ok) ' "$tmp/out")
    if [ $rc = 0 ] && grep -q "^1\.\.$plan\$" "$tmp/out" && [ "$plan" -ge "$min" ]; then ok "$name: all groups ran, exit 0"
    else not_ok "$name: all groups ran, exit 0" "status $rc, $plan groups" "$(tail -c 1500 "$tmp/err")"; fi
}
