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

# The training scripts' tests (char_gpt_test.sh, finetune_lora_test.sh):
bad() {   # name, pattern, args...: "$EMBER" "$SCRIPT" args must fail with status 1 saying pattern
    local name=$1 pattern=$2 out rc
    shift 2
    out=$("$EMBER" "$SCRIPT" "$@" 2>&1); rc=$?
    if [ $rc -eq 1 ] && echo "$out" | grep -q -- "$pattern"; then ok "$name"
    else not_ok "$name" "rc=$rc" "$out"; fi
}
text_file() {   # path, bytes: a text to train on: the licences (any text serves), else a generated one
    if ls /usr/share/common-licenses/* >/dev/null 2>&1; then
        cat /usr/share/common-licenses/* | head -c "$2" > "$1"
    else
        for i in $(seq 1 $(($2 / 50))); do echo "the quick brown fox $i jumps over the lazy dog."; done > "$1"
    fi
}
