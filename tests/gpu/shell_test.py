"""tests/gpu/shell_test.py — the shell's checks that need a GPU, as TAP:

1. Ctrl-C during a long GPU wait in the REPL (a pseudo-terminal) ends the
   wait with "interrupted!" and keeps the session: its globals, and the GPU
   works again afterwards.
2. Out of memory in the REPL: a tensor larger than the GPU raises the clear
   error, the session goes on, and the memory is usable once dropped.
3. `:time` on GPU code agrees with CUDA events within 5%.

Only the standard library (pty, os, select): the GPU machine has no pexpect.
EMBER names the executable (tests/run.sh sets it). EMBER_GPU_TEST_DEVICE=cpu
runs 1 and 2 against the CPU backend (a long CPU loop, no out-of-memory), so
the harness itself can be checked without a GPU; 3 needs CUDA events.
Without a GPU (and without that variable) every test skips. Under
EMBER_CUDA=emu (the emulated device) 1 and 2 run on smaller tensors and 3
skips: a timing there says nothing of a GPU's."""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "shell"))
from tap import report, done  # noqa: E402

EMBER = os.environ.get("EMBER") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "ember")
DEV = os.environ.get("EMBER_GPU_TEST_DEVICE", "cuda")
ON_CPU = DEV == "cpu"
# the emulated device (EMBER_CUDA=emu) runs kernels on the CPU: the same
# checks on smaller tensors
EMULATED = not ON_CPU and os.environ.get("EMBER_CUDA") == "emu"
NAMES = ["Ctrl-C during a long GPU wait ends it and keeps the session",
         "out of memory in the REPL: a clear error, the session goes on, the memory usable again",
         ":time on GPU code agrees with CUDA events within 5%"]


def gpu_skip_reason():
    if ON_CPU:
        return None
    code = 'local ok, why = ember.cuda.is_available(); io.write(ok and "" or tostring(why))'
    out = subprocess.run([EMBER, "-e", code], capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or (None if out.returncode == 0 else out.stderr.strip() or "ember failed")


class Repl:
    """ember's REPL on a pseudo-terminal; read_until collects output until a
    pattern appears or the deadline passes."""

    def __init__(self):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "dumb"
            os.execv(EMBER, [EMBER])
        self.buf = ""

    def send(self, text):
        os.write(self.fd, text.encode())

    def read_until(self, pattern, seconds):
        deadline = time.time() + seconds
        rx = re.compile(pattern)
        while time.time() < deadline:
            m = rx.search(self.buf)
            if m:
                return m
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                self.buf += data.decode(errors="replace")
        return rx.search(self.buf)

    def expect(self, pattern, seconds=60):
        """The match of pattern in the output since the last expect, or an
        AssertionError that shows that output."""
        m = self.read_until(pattern, seconds)
        if not m:
            raise AssertionError("no %r within %d s; output:\n%s" % (pattern, seconds, self.buf[-2000:]))
        self.buf = self.buf[m.end():]
        return m

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def ctrl_c():
    repl = Repl()
    try:
        repl.expect(r"> ", 60)
        dev = "cpu" if ON_CPU else DEV
        repl.send('x = 42; dev = "%s"\n' % dev)
        repl.expect(r"> ")
        # queued work far longer than the test waits, then a wait for all of it
        if ON_CPU:
            repl.send("local a = ember.randn(512, 512); for i = 1, 1e7 do a = (a:matmul(a) * 1e-3):tanh() end\n")
        else:
            # in place: nothing to allocate while the queue fills (about 0.2 ms a kernel on
            # 256 MB, so 40 s of work; launches block once the queue is full)
            n = 256 if EMULATED else 8192     # emulated: about 3 ms a kernel
            repl.send('local a = ember.randn(%d, %d, {device = dev}); '
                      'for i = 1, 200000 do a:mul_(1.0000001) end; ember.cuda.synchronize()\n' % (n, n))
        time.sleep(3)
        started = time.time()
        repl.send("\x03")
        repl.expect(r"interrupted", 20)
        took = time.time() - started
        repl.expect(r"> ", 30)
        repl.send('print("x is", x)\n')
        repl.expect(r"x is\s+42")
        repl.send('print("sum", ember.ones(1000, {device = dev}):sum():item())\n')
        repl.expect(r"sum\s+1000")
        return True, "interrupted after %.1f s" % took
    except AssertionError as e:
        return False, str(e)
    finally:
        repl.close()


def out_of_memory():
    if ON_CPU:
        return None, "needs a GPU (a CPU tensor that size would swap, not fail)"
    repl = Repl()
    try:
        repl.expect(r"> ", 60)
        repl.send('dev = "%s"; free0, total = ember.cuda.mem_get_info(dev)\n' % DEV)
        repl.expect(r"> ")
        # twice the GPU's memory in one tensor
        repl.send("big = ember.empty(total // 2, {device = dev})\n")
        repl.expect(r"out of memory", 60)
        repl.expect(r"> ")
        # most of it in tensors that fit, dropped, then again: the memory comes back
        repl.send("t = {}; for i = 1, 8 do t[i] = ember.empty(free0 // 40, {device = dev}) end; "
                  "t = nil; collectgarbage(); collectgarbage()\n")
        repl.expect(r"> ")
        repl.send("u = {}; for i = 1, 8 do u[i] = ember.empty(free0 // 40, {device = dev}) end; "
                  'print("again", #u)\n')
        repl.expect(r"again\s+8", 60)
        return True, ""
    except AssertionError as e:
        return False, str(e)
    finally:
        repl.close()


def time_vs_events():
    if ON_CPU:
        return None, "needs CUDA events"
    if EMULATED:
        # events there time the CPU's run of the queued work, and the host's
        # share of :time (launching, the emulator's bookkeeping) is no GPU's
        return None, "on the emulated device a timing says nothing of a GPU's"
    # best of 5 :time runs against the best of 5 event-timed runs of the same code
    script = "\n".join([
        'a = ember.randn(%d, %d, {device = "%s"})' % ((192, 192, DEV) if EMULATED else (4096, 4096, DEV)),
        "function work() for i = 1, 20 do a:matmul(a) end end",
        "work(); ember.cuda.synchronize()",
        ":time -n 5 work()",
        "best = math.huge",
        "for r = 1, 5 do local s, e = ember.cuda.Event({enable_timing = true}), ember.cuda.Event({enable_timing = true}); "
        "s:record(); work(); e:record(); e:synchronize(); best = math.min(best, s:elapsed_time(e)) end",
        'print(string.format("events %.6f ms", best))',
    ]) + "\n"
    out = subprocess.run([EMBER, "-i"], input=script, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    m = re.search(r"best ([0-9.]+) (ms|s|us|ns)", text)
    e = re.search(r"events ([0-9.]+) ms", text)
    if not m or not e:
        return False, "could not read the timings:\n" + text[-2000:]
    scale = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}[m.group(2)]
    shell_ms, event_ms = float(m.group(1)) * scale, float(e.group(1))
    ratio = shell_ms / event_ms
    return abs(ratio - 1) <= 0.05, ":time %.3f ms, events %.3f ms, ratio %.3f" % (shell_ms, event_ms, ratio)


def main():
    why = gpu_skip_reason()
    if why:
        for name in NAMES:
            report(name + " # SKIP " + why, True)
        done()
        return
    for name, test in zip(NAMES, [ctrl_c, out_of_memory, time_vs_events]):
        ok, detail = test()
        if ok is None:
            report(name + " # SKIP " + detail, True)
        else:
            report(name, ok, detail)
            if ok and detail:
                print("# " + detail)
    done()


if __name__ == "__main__":
    main()
