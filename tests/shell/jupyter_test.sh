#!/usr/bin/env bash
# jupyter_test.sh — `ember --kernel` with the real Jupyter tools (TAP):
#   - --install-kernel writes a kernelspec that jupyter_client finds;
#   - tests/shell/kernel_client.py drives the kernel with Debian's
#     jupyter_client (execute, streams, errors, complete, inspect,
#     is_complete, interrupt, a PNG figure, bad messages, shutdown);
#   - Debian's jupyter_kernel_test conformance suite
#     (tests/shell/jupyter_conformance.py);
#   - `jupyter nbconvert --execute` on tests/shell/fixtures/train_small.ipynb
#     (a small model trained, its loss printed and drawn).
# Tools that are absent make their tests skip. Everything started here is
# stopped: each step runs under `timeout`, and the kernelspec lives in a
# temporary prefix (JUPYTER_PATH) removed at the end.
set -u
cd "$(dirname "$0")/../.."
. tests/shell/tap.sh
EMBER=${EMBER:-$PWD/build/ember}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the kernel's runtime files (connection files) and Jupyter's data stay in tmp
export JUPYTER_RUNTIME_DIR=$tmp/runtime JUPYTER_DATA_DIR=$tmp/data JUPYTER_CONFIG_DIR=$tmp/config
export JUPYTER_PATH=$tmp/prefix/share/jupyter
export IPYTHONDIR=$tmp/ipython
export JUPYTER_PLATFORM_DIRS=1

# --install-kernel
if "$EMBER" --install-kernel --prefix "$tmp/prefix" > "$tmp/install.out" 2>&1 &&
   "$PY" - "$tmp/prefix/share/jupyter/kernels/ember/kernel.json" "$EMBER" <<'PYEOF'
import json, os, sys
spec = json.load(open(sys.argv[1]))
assert spec["argv"] == [os.path.realpath(sys.argv[2]), "--kernel", "{connection_file}"], spec
assert spec["language"] == "lua" and spec["interrupt_mode"] == "signal" and spec["display_name"] == "ember (Lua 5.4)"
PYEOF
then ok "--install-kernel --prefix writes kernel.json"
else not_ok "--install-kernel --prefix writes kernel.json" "$(cat "$tmp/install.out")"
fi
if HOME=$tmp/home JUPYTER_DATA_DIR= XDG_DATA_HOME= "$EMBER" --install-kernel --user > /dev/null 2>&1 &&
   [ -f "$tmp/home/.local/share/jupyter/kernels/ember/kernel.json" ]
then ok "--install-kernel --user writes ~/.local/share/jupyter/kernels/ember"
else not_ok "--install-kernel --user writes ~/.local/share/jupyter/kernels/ember"
fi
if "$EMBER" --install-kernel --bogus > /dev/null 2>&1; then not_ok "--install-kernel rejects an unknown argument"
else ok "--install-kernel rejects an unknown argument"
fi
if "$EMBER" --kernel "$tmp/missing.json" > /dev/null 2> "$tmp/err"; then
    not_ok "--kernel with a missing connection file fails"
elif grep -q "connection file" "$tmp/err"; then ok "--kernel with a missing connection file fails with a message"
else not_ok "--kernel with a missing connection file fails with a message" "$(cat "$tmp/err")"
fi
# the protocol side is a library of its own: without it, --kernel says what is missing
if EMBER_KERNEL_LIB=$tmp/none.so "$EMBER" --kernel "$tmp/missing.json" > /dev/null 2> "$tmp/err"; then
    not_ok "--kernel without libember_kernel.so fails"
elif grep -q "cannot load the Jupyter kernel ($tmp/none.so).*libzmq3-dev libssl-dev" "$tmp/err"; then
    ok "--kernel without libember_kernel.so fails naming the library and the packages"
else not_ok "--kernel without libember_kernel.so fails naming the library and the packages" "$(cat "$tmp/err")"
fi
# a normal start loads neither ZeroMQ nor OpenSSL
if maps=$("$EMBER" -e 'io.write(io.open("/proc/self/maps"):read("a"))' 2>&1) &&
   ! grep -q "libzmq\|libcrypto\|libember_kernel" <<< "$maps"
then ok "a normal start loads no ZeroMQ, OpenSSL or kernel library"
else not_ok "a normal start loads no ZeroMQ, OpenSSL or kernel library" "$(grep "libzmq\|libcrypto\|kernel" <<< "$maps")"
fi

relay() {   # name, TAP file, exit status: the TAP lines renumbered into ours
    local name=$1 file=$2 rc=$3 line
    while IFS= read -r line; do
        case "$line" in
            "ok "*"# SKIP"*) n=$((n + 1)); echo "ok $n - $name: ${line#ok * - }" ;;
            "ok "*) ok "$name: ${line#ok * - }" ;;
            "not ok "*) not_ok "$name: ${line#not ok * - }" ;;
            "#"*) echo "$line" ;;
        esac
    done < "$file"
    if [ "$rc" -ne 0 ] && ! grep -q "^not ok" "$file"; then
        not_ok "$name exited with status $rc" "$(tail -20 "$file")"
    fi
}

if ! "$PY" -c "import jupyter_client" 2> /dev/null; then
    n=$((n + 1)); echo "ok $n - jupyter_client tests # SKIP python3-jupyter-client is not installed"
else
    timeout 240 "$PY" tests/shell/kernel_client.py > "$tmp/client.tap" 2>&1; rc=$?
    relay client "$tmp/client.tap" $rc
fi

if ! "$PY" -c "import jupyter_kernel_test" 2> /dev/null; then
    n=$((n + 1)); echo "ok $n - conformance suite # SKIP python3-jupyter-kernel-test is not installed"
else
    timeout 240 "$PY" tests/shell/jupyter_conformance.py > "$tmp/conf.tap" 2>&1; rc=$?
    relay conformance "$tmp/conf.tap" $rc
fi

nb=tests/shell/fixtures/train_small.ipynb
if ! command -v jupyter-nbconvert > /dev/null 2>&1; then
    n=$((n + 1)); echo "ok $n - nbconvert --execute # SKIP jupyter-nbconvert is not installed"
elif ! command -v "${EMBER_GNUPLOT:-gnuplot}" > /dev/null 2>&1; then
    n=$((n + 1)); echo "ok $n - nbconvert --execute # SKIP no gnuplot for the loss curve"
else
    if timeout 240 jupyter-nbconvert --to notebook --execute --ExecutePreprocessor.kernel_name=ember \
            --ExecutePreprocessor.timeout=120 --output-dir "$tmp" --output executed "$nb" > "$tmp/nbconvert.log" 2>&1
    then ok "nbconvert --execute runs $nb"
    else not_ok "nbconvert --execute runs $nb" "$(tail -30 "$tmp/nbconvert.log")"
    fi
    if "$PY" - "$tmp/executed.ipynb" > "$tmp/nbcheck.log" 2>&1 <<'PYEOF'
import base64, re, sys
import nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
text, pngs = "", []
for cell in nb.cells:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            sys.exit("error output: %s" % out.get("evalue"))
        text += out.get("text", "") + out.get("data", {}).get("text/plain", "")
        if "image/png" in out.get("data", {}):
            pngs.append(base64.b64decode(out["data"]["image/png"]))
losses = [float(x) for x in re.findall(r"loss\s+([0-9.eE+-]+)", text)]
print("losses:", losses)
assert len(losses) >= 5, "the loss is printed at each step"
assert losses[-1] < 0.5 * losses[0], "the loss falls"
assert pngs and all(p[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs), "a PNG loss curve"
PYEOF
    then ok "the executed notebook has the falling loss and a PNG loss curve"
    else not_ok "the executed notebook has the falling loss and a PNG loss curve" "$(cat "$tmp/nbcheck.log")"
    fi
fi

echo "1..$n"
[ "$failed" -eq 0 ]
