#!/usr/bin/env bash
# autocast_entry_test.sh — the engine's compositions call the internal form of
# every op that has an autocast policy (ei_matmul, not em_matmul), so that
# only a caller outside the engine gets the policy (engine/internal.h,
# EM_AUTOCAST). Each em_X whose ei_X internal.h declares appears in
# engine/*.c once: the public wrapper's own definition.
set -u
cd "$(dirname "$0")/../.."
. tests/shell/tap.sh

ops=$(sed -n 's/^EM_INTERNAL_FORM(\([a-z_0-9]*\));.*/\1/p' engine/internal.h)
[ -n "$ops" ] || { not_ok "internal.h declares the internal forms" "no ei_ prototypes found"; echo "1..$n"; exit 1; }
for op in $ops; do
    uses=$(grep -nE "\bem_${op}\(" engine/*.c engine/cpu/*.c)
    count=$(printf '%s\n' "$uses" | grep -c .)
    defs=$(printf '%s\n' "$uses" | grep -cE "^[^:]*:[0-9]+:em_tensor \*em_${op}\(")
    if [ "$count" -eq 1 ] && [ "$defs" -eq 1 ]; then ok "em_$op is called from outside the engine only"
    else not_ok "em_$op is called from outside the engine only" \
        "expected its definition alone; found (call ei_$op inside the engine):
$uses"; fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
