#!/usr/bin/env bash
# scripts/gpu-session.sh PHASE... — the work a lent GPU machine does, in
# few device calls, every log under $OUT (the device tool brings it back).
# Run through scripts/gpu-run.sh, which points EMBER, BUILD, BUSTED and the
# loader at the bundle of scripts/gpu-bundle.sh:
#   bash scripts/gpu-run.sh bash scripts/gpu-session.sh info suites sync
#   bash scripts/gpu-run.sh bash scripts/gpu-session.sh memcheck
#   bash scripts/gpu-run.sh bash scripts/gpu-session.sh racecheck mlp bench
# Phases (each bounded by PHASE_TIMEOUT seconds, default 540):
#   info       nvidia-smi, the driver, what ember sees (is_available, name, :gpu)
#   suites     tests/gpu/run.sh                    -> $OUT/suites.log
#   sync       the same with EMBER_CUDA_SYNC=1     -> $OUT/suites_sync.log
#   memcheck   compute-sanitizer memcheck on every GPU spec   -> $OUT/memcheck/<spec>.log
#   racecheck  racecheck and synccheck on the specs whose kernels use shared
#              memory (SHARED_SPECS)                          -> $OUT/racecheck/, $OUT/synccheck/
#   mlp        scripts/fashion_mnist_mlp.lua --device cuda (FM_DATA, which
#              gpu-run.sh sets from gpu-bundle.sh --data's .gpu/data) -> $OUT/mlp.log
#   bench      scripts/bench/run-gpu.sh (make bench-gpu's table) -> $OUT/bench.log
#   ddp        scripts/bench/ddp_overlap.lua under the bundle's mpirun, 2 and 4
#              CPU processes (DDP's overlap with cores to spare) -> $OUT/ddp_np*.log
# SPECS="a b" limits memcheck to tests/gpu/{a,b}_spec.lua. A summary line per
# phase goes to stdout and $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.gpu/out}
mkdir -p "$OUT"
: "${EMBER:?run through scripts/gpu-run.sh (EMBER unset)}"
: "${BUSTED:?run through scripts/gpu-run.sh (BUSTED unset)}"
PHASE_TIMEOUT=${PHASE_TIMEOUT:-540}
SHARED_SPECS=${SHARED_SPECS:-"reduce reduction attention elementwise nn_extra conv multi_tensor half"}

say() { echo "$*" | tee -a "$OUT/summary.txt"; }

# the TAP closing counts of a log, as tests/run.sh prints them
tally() {
    local log=$1 p f
    p=$(grep -E '^ok ' "$log" | grep -vc '# SKIP')
    f=$(grep -cE '^not ok ' "$log")
    echo "$p passed, $f failed"
}

sanitize() { # tool, folder, specs...
    local tool=$1 dir=$OUT/$2 spec name rc
    shift 2
    mkdir -p "$dir"
    if ! command -v compute-sanitizer >/dev/null 2>&1; then
        say "$tool: compute-sanitizer is not on PATH"
        return
    fi
    for spec in "$@"; do
        name=$(basename "$spec" _spec.lua)
        # shellcheck disable=SC2086  # BUSTED is "ember busted.lua"
        timeout "$PHASE_TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 50 \
            $BUSTED -o TAP "$spec" > "$dir/$name.log" 2>&1
        rc=$?
        say "$tool $name: exit $rc, $(tally "$dir/$name.log"), $(grep -c '^========= .*[Ee]rror\|^========= Invalid\|^========= Race' "$dir/$name.log") reports"
    done
}

specs() {
    local s out=()
    if [ -n "${SPECS:-}" ]; then
        for s in $SPECS; do out+=("tests/gpu/${s}_spec.lua"); done
    else
        out=(tests/gpu/*_spec.lua)
    fi
    echo "${out[@]}"
}

for phase in "$@"; do
    case $phase in
    info)
        { nvidia-smi || true; "$EMBER" -v
          "$EMBER" -e 'print("cuda available:", ember.cuda.is_available())
                       if ember.cuda.is_available() then print(ember.cuda.get_device_name()) end'
          printf ':gpu\n' | "$EMBER" -i 2>&1 | head -40; } > "$OUT/info.log" 2>&1
        say "info: $(grep -m1 'cuda available' "$OUT/info.log")"
        ;;
    suites)
        timeout "$PHASE_TIMEOUT" bash tests/gpu/run.sh > "$OUT/suites.log" 2>&1
        say "suites: exit $?, $(tail -1 "$OUT/suites.log")"
        ;;
    sync)
        EMBER_CUDA_SYNC=1 timeout "$PHASE_TIMEOUT" bash tests/gpu/run.sh > "$OUT/suites_sync.log" 2>&1
        say "sync: exit $?, $(tail -1 "$OUT/suites_sync.log")"
        ;;
    memcheck)
        # shellcheck disable=SC2046
        sanitize memcheck memcheck $(specs)
        ;;
    racecheck)
        list=()
        for s in $SHARED_SPECS; do list+=("tests/gpu/${s}_spec.lua"); done
        sanitize racecheck racecheck "${list[@]}"
        sanitize synccheck synccheck "${list[@]}"
        ;;
    mlp)
        if [ -z "${FM_DATA:-}" ]; then
            say "mlp: no Fashion-MNIST (scripts/gpu-bundle.sh --data makes .gpu/data; carry it)"
            continue
        fi
        ck=$(mktemp -u)
        timeout "$PHASE_TIMEOUT" "$EMBER" scripts/fashion_mnist_mlp.lua --device cuda --epochs "${MLP_EPOCHS:-10}" \
            --data "$FM_DATA" --checkpoint "$ck" > "$OUT/mlp.log" 2>&1
        say "mlp: exit $?, $(grep -i 'accuracy' "$OUT/mlp.log" | tail -1)"
        rm -f "$ck"
        ;;
    ddp)
        # DDP's overlap of gradient all-reduce with backward, where cores are to spare: 2 and 4 CPU processes
        for np in 2 4; do
            over=()
            if [ "$(nproc)" -lt $np ]; then over=(--oversubscribe); fi
            timeout "$PHASE_TIMEOUT" mpirun "${over[@]}" -n $np "$EMBER" scripts/bench/ddp_overlap.lua 20 \
                > "$OUT/ddp_np$np.log" 2>&1
            say "ddp $np processes: exit $?, $(grep -c hidden "$OUT/ddp_np$np.log") cases"
        done
        ;;
    bench)
        FM_DATA=${FM_DATA:-/nonexistent} timeout "$PHASE_TIMEOUT" bash scripts/bench/run-gpu.sh > "$OUT/bench.log" 2>&1
        say "bench: exit $?, $(wc -l < "$OUT/bench.log") lines"
        ;;
    *)
        say "unknown phase '$phase' (info suites sync memcheck racecheck mlp bench ddp)"
        ;;
    esac
done
