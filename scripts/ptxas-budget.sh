#!/usr/bin/env bash
# scripts/ptxas-budget.sh — the per-kernel resource budget of the CUDA
# backend (kernels/ptxas_budget.txt), checked against what ptxas reports.
#
#   bash scripts/ptxas-budget.sh check  BUDGET LOG...
#   bash scripts/ptxas-budget.sh update BUDGET LOG...
#
# A LOG is the stderr of `nvcc $(NVFLAGS) -Xptxas -v -c kernels/X.cu`. Only
# the sm_90 entries count (sm_80 is compiled too, but one architecture keeps
# the budget readable; sm_90 is the one the GPU sessions run). ptxas prints,
# per kernel (nvcc 13 / ptxas 13.0):
#   ptxas info    : Compiling entry function '_Z...' for 'sm_90'
#   ptxas info    : Function properties for _Z...
#       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#   ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
# ("N bytes smem" is left out when the kernel has no static shared memory,
# and dynamic shared memory never shows; a kernel that calls a non-inlined
# function adds ", N bytes cumulative stack size" to the Used line, and the
# callee's own "Function properties for __internal_accurate_pow" block comes
# just before the caller's "Compiling entry function" line.) The budget's
# stack figure is the larger of the stack frame and the cumulative stack
# size; a callee's spills count as its caller's.
#
# check: exit 1 with one line per offence on stderr when a kernel of the
# logs spills (any spill store or load), uses more registers, static shared
# memory or stack frame than its budget line, or has no budget line at all
# (new kernels must be budgeted). Only the kernels in the given logs are
# checked, so one object's log checks that object. Exit 2 on a usage error,
# an unreadable file, or a log without ptxas -v output.
#
# update: rewrites BUDGET with the current figures of the kernels in the
# logs. Lines of other source files (a log's file is its name up to the
# first dot: build/kernels/attention.o.ptxas and /tmp/attention.log are both
# "attention") are kept; lines of the logs' files are replaced, so a removed
# kernel's line goes when its file's log is given. Review the diff and commit.
#
# Keys are the mangled names with the hex hashes of nvcc's anonymous
# namespaces (_GLOBAL__N__<hash>_<len><file>_<hash>) zeroed: the first
# follows the source's absolute path, so it differs between checkouts.
# Demangled names (c++filt) are comments.
set -euo pipefail

prog=ptxas-budget
usage() { echo "usage: $0 check|update BUDGET LOG..." >&2; exit 2; }
[ $# -ge 3 ] || usage
mode=$1 budget=$2
shift 2
case $mode in check|update) ;; *) usage ;; esac
for f in "$@"; do
    [ -r "$f" ] || { echo "$prog: cannot read log $f" >&2; exit 2; }
    grep -q '^ptxas info' "$f" || { echo "$prog: no ptxas -v output in $f (compiled without -Xptxas -v?)" >&2; exit 2; }
done
if [ "$mode" = check ] && [ ! -r "$budget" ]; then
    echo "$prog: cannot read budget $budget" >&2; exit 2
fi

demangle() {  # stdin: one name a line; stdout: the same lines demangled
    if command -v c++filt >/dev/null 2>&1; then c++filt; else cat; fi
}

# parse LOG...: one line per sm_90 kernel:
#   unit key registers smem stack spill_stores spill_loads
parse() {
    awk '
    function zero(s,   i, o, c) {          # hex digits -> 0, length kept
        o = ""
        for (i = 1; i <= length(s); i++) { c = substr(s, i, 1); o = o (c ~ /[0-9a-f]/ ? "0" : c) }
        return o
    }
    # zero the hashes of every anonymous namespace <len>_GLOBAL__N__<h>_<len><file>_<h>
    function normkey(s,   out, p, q, n, id, head, tail) {
        out = ""
        while ((p = index(s, "_GLOBAL__N__")) > 0) {
            q = p
            while (q > 1 && substr(s, q - 1, 1) ~ /[0-9]/) q--
            n = substr(s, q, p - q) + 0
            if (q == p || n < 13) { out = out substr(s, 1, p + 11); s = substr(s, p + 12); continue }
            id = substr(s, p, n)
            head = id; sub(/^_GLOBAL__N__[0-9a-f]+/, "", head)
            tail = ""
            if (match(head, /_[0-9a-f]+$/)) { tail = substr(head, RSTART); head = substr(head, 1, RSTART - 1) }
            out = out substr(s, 1, p - 1) "_GLOBAL__N__" zero(substr(id, 13, n - 12 - length(head) - length(tail))) head zero(tail)
            s = substr(s, p + n)
        }
        return out s
    }
    function flush() {
        if (cur != "") print unit, normkey(cur), regs, smem, stack, sst, sld
        cur = ""
    }
    FNR == 1 {
        flush()
        unit = FILENAME; sub(/.*\//, "", unit); sub(/\..*/, "", unit)
        if (unit == "") unit = "-"
        csst = csld = 0
    }
    # non-inlined callees (__internal_accurate_pow...) are printed just
    # before the entry that calls them: their spills count as the entry
    /Compiling entry function / {
        flush()
        n = split($0, q, "\047")
        if (n >= 5 && q[4] == "sm_90") {
            cur = q[2]; regs = smem = stack = 0; sst = csst; sld = csld; props = 0
        }
        csst = csld = 0
        next
    }
    /Function properties for / {
        name = $0; sub(/.*Function properties for /, "", name); sub(/[ \t\r]+$/, "", name)
        props = (cur != "" && name == cur) ? 1 : (cur == "" ? 2 : 0)
        next
    }
    props && /bytes stack frame/ {
        fr = st = ld = 0
        n = split($0, f, ",")
        for (i = 1; i <= n; i++) {
            split(f[i], w, " ")
            if (f[i] ~ /bytes stack frame/)  fr = w[1] + 0
            if (f[i] ~ /bytes spill stores/) st = w[1] + 0
            if (f[i] ~ /bytes spill loads/)  ld = w[1] + 0
        }
        if (props == 1) { stack = fr; sst += st; sld += ld }
        else { csst += st; csld += ld }
        props = 0
        next
    }
    /: [0-9]+ bytes gmem/ { flush(); csst = csld = 0; next }
    cur != "" && /: Used [0-9]+ registers/ {
        line = $0; sub(/.*: Used /, "", line)
        n = split(line, f, ",")
        for (i = 1; i <= n; i++) {
            split(f[i], w, " ")
            if (f[i] ~ /registers/)   regs = w[1] + 0
            if (f[i] ~ /bytes smem/)  smem = w[1] + 0
            # with non-inlined callees: the frame of the whole call chain
            if (f[i] ~ /bytes cumulative stack size/ && w[1] + 0 > stack) stack = w[1] + 0
        }
        flush()
        next
    }
    END { flush() }
    ' "$@"
}

parsed=$(parse "$@")

if [ "$mode" = check ]; then
    # key<TAB>message for each offence
    offences=$(printf '%s\n' "$parsed" | awk -v budget="$budget" '
    BEGIN {
        while ((getline line < budget) > 0) {
            ln++
            sub(/#.*/, "", line)
            if (line ~ /^[ \t]*$/) continue
            n = split(line, f, " ")
            if ((n != 5 && n != 6) || f[1] !~ /^[0-9]+$/ || f[2] !~ /^[0-9]+$/ || f[3] !~ /^[0-9]+$/ ||
                (n == 6 && f[6] !~ /^spill=[0-9]+$/)) {
                printf "ptxas-budget: %s:%d: malformed line (want: registers smem stack file key [spill=N])\n", budget, ln > "/dev/stderr"
                bad = 1; continue
            }
            k = f[5]
            if (n == 6) { v = f[6]; sub(/^spill=/, "", v); if (v + 0 > P[k]) P[k] = v + 0 }
            if (k in R) {  # the same kernel compiled in two files: the larger figures
                if (f[1] + 0 > R[k]) R[k] = f[1] + 0
                if (f[2] + 0 > S[k]) S[k] = f[2] + 0
                if (f[3] + 0 > T[k]) T[k] = f[3] + 0
            } else { R[k] = f[1] + 0; S[k] = f[2] + 0; T[k] = f[3] + 0 }
        }
        if (bad) exit 2
    }
    NF == 7 {
        u = $1; k = $2
        if ($6 > P[k] + 0 || $7 > P[k] + 0)
            printf "%s\t%s\t%d bytes spill stores, %d bytes spill loads, budget %d\t\n", k, u, $6, $7, P[k] + 0
        if (!(k in R)) {
            printf "%s\t%s\tno budget line (%d registers, %d bytes smem, %d bytes stack)\tk\n", k, u, $3, $4, $5
            next
        }
        if ($3 > R[k]) printf "%s\t%s\t%d registers, budget %d\t\n", k, u, $3, R[k]
        if ($4 > S[k]) printf "%s\t%s\t%d bytes smem, budget %d\t\n", k, u, $4, S[k]
        if ($5 > T[k]) printf "%s\t%s\t%d bytes stack, budget %d\t\n", k, u, $5, T[k]
    }
    ') || exit $?
    if [ -n "$offences" ]; then
        keys=$(printf '%s\n' "$offences" | cut -f1)
        names=$(printf '%s\n' "$keys" | demangle)
        paste -d '\t' <(printf '%s\n' "$names") <(printf '%s\n' "$offences") |
            awk -F '\t' '{ printf "ptxas-budget: %s: %s: %s%s\n", $3, $4, $1, ($5 == "k" ? " [" $2 "]" : "") }' >&2
        n=$(printf '%s\n' "$offences" | wc -l)
        echo "$prog: $n offence(s) against $budget; if the new figures are intended: bash scripts/ptxas-budget.sh update $budget LOG..., and commit it (spills must be fixed)" >&2
        exit 1
    fi
    exit 0
fi

# update
units=$(printf '%s\n' "$parsed" | awk 'NF == 7 { print $1 }' | sort -u)
for f in "$@"; do  # a log without sm_90 kernels still names its file
    u=$(basename "$f"); u=${u%%.*}
    units=$(printf '%s\n%s\n' "$units" "$u")
done
kept=""
if [ -r "$budget" ]; then
    kept=$(awk -v units="$units" '
        BEGIN { n = split(units, u, "\n"); for (i = 1; i <= n; i++) if (u[i] != "") drop[u[i]] = 1 }
        /^[ \t]*#/ || /^[ \t]*$/ { next }
        { sp = 0; if ($6 ~ /^spill=/) { sp = $6; sub(/^spill=/, "", sp) }
          if (!($4 in drop)) print $4, $5, $1, $2, $3, sp }
    ' "$budget")
fi
# unit key registers smem stack, one per kernel (largest figures if repeated)
# (a sixth column: the spill, the larger of its stores and loads, 0 for none)
rows=$( { printf '%s\n' "$parsed" | awk 'NF == 7 { print $1, $2, $3, $4, $5, ($6 > $7 ? $6 : $7) }'; printf '%s\n' "$kept"; } |
    awk 'NF == 6 {
        id = $1 " " $2
        if (!(id in R)) { order[++n] = id; R[id] = $3; S[id] = $4; T[id] = $5; P[id] = $6 }
        else { if ($3 > R[id]) R[id] = $3; if ($4 > S[id]) S[id] = $4; if ($5 > T[id]) T[id] = $5; if ($6 > P[id]) P[id] = $6 }
    }
    END { for (i = 1; i <= n; i++) { split(order[i], p, " "); print p[1], p[2], R[order[i]], S[order[i]], T[order[i]], P[order[i]] } }' |
    LC_ALL=C sort -k1,1 -k2,2)
spills=$(printf '%s\n' "$parsed" | awk 'NF == 7 && ($6 > 0 || $7 > 0) { print $1 ": " $2 " spills " $6 " bytes stores, " $7 " bytes loads" }')

tmp=$(mktemp "${budget}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
cat <<'EOF'
# kernels/ptxas_budget.txt — per-kernel resource budget of the CUDA backend
# on sm_90 (H100/H200): what ptxas reports for every kernel instantiation,
# as committed. Every nvcc build of kernels/X.cu compiles with -Xptxas -v
# and runs `bash scripts/ptxas-budget.sh check kernels/ptxas_budget.txt LOG`
# on its output: the build fails when a kernel spills (any spill store or
# load) more than its line's spill=N allows (none without one), uses more
# registers, static shared memory or stack frame than its line, or has no
# line (new kernels must be budgeted). Fewer is fine. A spill=N marks a spill
# known when the budget was made, each one owed a fix measured on a GPU
# (kernels/README.md lists them); update records spills as they are.
#
# To update after an intended change (a new kernel, more registers):
#   make cuda        # writes build/kernels/X.o.ptxas beside each object
#   bash scripts/ptxas-budget.sh update kernels/ptxas_budget.txt build/kernels/*.o.ptxas
# then review the diff and commit it with the change. Given fewer logs,
# update rewrites only the lines of those logs' files.
#
# Columns: registers, smem bytes (static __shared__; dynamic shared memory
# is not reported by ptxas), stack bytes (the stack frame, or the
# cumulative stack size with non-inlined callees), source file, kernel key
# (mangled name, anonymous-namespace hashes zeroed); the demangled name
# follows as a comment. Generated by scripts/ptxas-budget.sh update.
#
# registers smem stack file key [spill=N]  # demangled
EOF
if [ -n "$rows" ]; then
    paste -d '\t' <(printf '%s\n' "$rows") <(printf '%s\n' "$rows" | awk '{ print $2 }' | demangle) |
        awk -F '\t' '{ split($1, p, " "); printf "%d %d %d %s %s%s  # %s\n", p[3], p[4], p[5], p[1], p[2], (p[6] > 0 ? " spill=" p[6] : ""), $2 }'
fi
} > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$budget"
trap - EXIT
n=$(grep -c '^[0-9]' "$budget" || true)
echo "$prog: wrote $budget ($n kernels)" >&2
if [ -n "$spills" ]; then
    printf '%s: warning: spilling kernels (recorded as spill=N; each is owed a fix):\n%s\n' "$prog" "$spills" >&2
fi
