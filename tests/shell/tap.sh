# tap.sh — what the shell test scripts share (sourced, from the repository
# root): TAP output. ok NAME; not_ok NAME DETAILS... (details become "# "
# lines). $n counts the tests, $failed the failures.
n=0 failed=0

ok() {   # name
    n=$((n + 1)); echo "ok $n - $1"
}
not_ok() {   # name, details...
    n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
    shift
    for line in "$@"; do printf '%s\n' "$line" | sed 's/^/# /'; done
}
