#!/usr/bin/env python3
"""attach_test.py — `ember --listen` and `ember --attach PID` as people use
them (TAP): a job runs in the background with its output in a log, and a
debugger attaches to it from a pseudo-terminal: the prompt at the running
line, p, assignments, bt, a breakpoint, continue and Ctrl-C, detach and a
later attach; the refusals (a second client, a process that does not
listen, no process, stale sockets, another user's job); the socket's modes
and its removal at exit, on an error and on SIGTERM.

XDG_RUNTIME_DIR is a temporary directory, so sockets land in it. EMBER is
the executable (tests/run.sh sets it); default build/ember. Every wait is
bounded. Needs pexpect; without it the tests are reported as skipped."""
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EMBER = os.path.abspath(os.environ.get("EMBER", os.path.join(ROOT, "build", "ember")))
TIMEOUT = 20

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import report, done  # noqa: E402

try:
    import pexpect
except ImportError:
    print("ok 1 - attaching to a running job # SKIP pexpect is not installed")
    print("1..1")
    sys.exit(0)

tmp = tempfile.mkdtemp()
os.chmod(tmp, 0o755)
RUN = os.path.join(tmp, "run")
os.mkdir(RUN, 0o700)
SOCKDIR = os.path.join(RUN, "ember")
inputrc = os.path.join(tmp, "inputrc")
with open(inputrc, "w") as f:
    f.write("set bell-style none\nset enable-bracketed-paste off\n")

ENV = dict(os.environ, TERM="xterm", INPUTRC=inputrc, XDG_RUNTIME_DIR=RUN,
           EMBER_HISTORY=os.path.join(tmp, "history"), NO_COLOR="1")
for k in ("EMBER_INIT", "EMBER_LISTEN"):
    ENV.pop(k, None)

DBG = "(dbg) "
jobs = []


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


LOOP = write("loop.lua", """local function train(limit)
  local counter, stop = 0, false
  while not stop do
    counter = counter + 1
    if counter > limit then counter = 0 end
  end
  return counter
end
local final = train(1e12)
print("finished at " .. final)
""")

FAIL = write("fail.lua", """local t = os.clock()
while os.clock() - t < 0.5 do end
error("boom")
""")


def sock(pid, d=SOCKDIR):
    return os.path.join(d, "%d.sock" % pid)


def wait_for(cond, seconds, what):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def start_job(script=LOOP, args=("--listen",), env_extra=None, prefix=(), sockdir=SOCKDIR):
    """The job in the background, its output in a log; returns once its
    socket is there."""
    env = dict(ENV, **(env_extra or {}))
    logpath = os.path.join(tmp, "job%d.log" % len(jobs))
    log = open(logpath, "w")
    proc = subprocess.Popen(list(prefix) + [EMBER] + list(args) + [script], stdout=log,
                            stderr=subprocess.STDOUT, env=env, cwd=tmp, stdin=subprocess.DEVNULL)
    log.close()
    proc.logpath = logpath
    jobs.append(proc)
    if "--listen" in args or (env_extra or {}).get("EMBER_LISTEN"):
        wait_for(lambda: os.path.exists(sock(proc.pid, sockdir)) or proc.poll() is not None, 10,
                 "the socket of job %d" % proc.pid)
    return proc


def log_of(proc):
    with open(proc.logpath) as f:
        return f.read()


def end_job(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def attach(pid, env_extra=None):
    return pexpect.spawn(EMBER, ["--attach", str(pid)], env=dict(ENV, **(env_extra or {})),
                         encoding="utf-8", timeout=TIMEOUT, dimensions=(40, 120), cwd=tmp)


def attached(pid):
    """A client at the job's prompt."""
    q = attach(pid)
    q.expect(r"attached: stopped")
    q.expect_exact(DBG)
    return q


def refused(pid, pattern, env_extra=None):
    """attach is refused with a message matching pattern, status 1."""
    q = attach(pid, env_extra)
    q.expect(pattern)
    q.expect(pexpect.EOF)
    q.close()
    assert q.exitstatus == 1, q.exitstatus


def cmd(q, line):
    """Sends a command at the (dbg) prompt; returns what came before the next prompt."""
    q.sendline(line)
    q.expect_exact(DBG)
    return q.before.replace("\r", "")


def check(name, fn):
    if os.environ.get("ONLY") and os.environ["ONLY"] not in name:
        return
    try:
        fn()
        report(name, True)
    except (pexpect.TIMEOUT, pexpect.EOF, AssertionError, subprocess.TimeoutExpired) as e:
        report(name, False, "%s: %s" % (type(e).__name__, e))


# ---- one job, attached to several times -------------------------------------

job = None


def socket_modes():
    global job
    job = start_job()
    st = os.lstat(sock(job.pid))
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    d = os.lstat(SOCKDIR)
    assert stat.S_ISDIR(d.st_mode) and stat.S_IMODE(d.st_mode) == 0o700, oct(d.st_mode)
    assert d.st_uid == os.getuid() and st.st_uid == os.getuid()
    assert "ember --attach %d" % job.pid in log_of(job), log_of(job)


def attach_inspect_and_refuse_second():
    q = attach(job.pid)
    q.expect(r"attached: stopped at \S*loop\.lua:[3-5] \(in function 'train'\)")
    q.expect_exact(DBG)
    out = cmd(q, "p counter")
    first = int(re.search(r"(\d+)\s*$", out.strip()).group(1))
    assert first > 0, out
    out = cmd(q, "bt")
    assert re.search(r"\*\s+0\s+\S*loop\.lua:\d in function 'train'", out), out
    assert re.search(r"1\s+\S*loop\.lua:9 in main chunk", out), out
    out = cmd(q, "locals")
    assert "limit = 1000000000000" in out and "stop = false" in out, out
    # a second client while this one is there
    refused(job.pid, r"job %d already has a debugger attached" % job.pid)
    # the job is paused: counter has not moved
    out = cmd(q, "counter")
    assert out.strip().endswith(str(first)), (out, first)
    # continue, then Ctrl-C here pauses it again, further on
    q.sendline("continue")
    q.expect_exact("running (Ctrl-C here pauses it)")
    time.sleep(0.3)
    q.sendintr()
    q.expect(r"paused: stopped at \S*loop\.lua:[3-5]")
    q.expect_exact(DBG)
    out = cmd(q, "p counter")
    later = int(re.search(r"(\d+)\s*$", out.strip()).group(1))
    assert later > first, (first, later)
    q.sendline("detach")
    q.expect(r"detached from job %d: it runs on" % job.pid)
    q.expect(pexpect.EOF)
    q.close()
    assert q.exitstatus == 0, q.exitstatus
    assert job.poll() is None, "the job ended"
    log = log_of(job)
    assert "a debugger attached" in log and "the debugger detached" in log, log


def breakpoint_set_remotely():
    q = attached(job.pid)
    out = cmd(q, "break loop.lua:5")
    assert "breakpoint 1 at loop.lua:5" in out, out
    q.sendline("c")
    q.expect(r"breakpoint 1: stopped at \S*loop\.lua:5")
    q.expect_exact(DBG)
    out = cmd(q, "counter = 41")
    out = cmd(q, "counter + 1")
    assert out.strip().endswith("42"), out
    # Ctrl-D detaches too; the breakpoints of the session go with it
    q.sendeof()
    q.expect(r"detached from job %d \(its breakpoints from this session deleted\)" % job.pid)
    q.expect(pexpect.EOF)
    q.close()
    time.sleep(0.3)
    assert job.poll() is None, "the job ended"
    # no breakpoint is left to stop it: a later client finds it running
    q = attached(job.pid)
    out = cmd(q, "breaks")
    assert "no breakpoints" in out, out
    q.sendline("quit")   # detaches, never aborts an attached job
    q.expect("detached from job")
    q.expect(pexpect.EOF)
    q.close()


def client_killed_while_running():
    q = attached(job.pid)
    q.sendline("c")
    q.expect_exact("running")
    q.kill(signal.SIGKILL)
    q.close(force=True)
    time.sleep(0.3)
    assert job.poll() is None, "the job ended"
    q = attached(job.pid)
    q.sendline("detach")
    q.expect(pexpect.EOF)
    q.close()


def told_to_stop_then_socket_removed():
    q = attached(job.pid)
    cmd(q, "counter = -5")
    cmd(q, "stop = true")
    q.sendline("continue")   # still attached when the job ends
    q.expect_exact("the job has ended (its connection closed)")
    q.expect(pexpect.EOF)
    q.close()
    assert q.exitstatus == 0, q.exitstatus
    job.wait(10)
    assert job.returncode == 0, job.returncode
    assert re.search(r"finished at -[45]\b", log_of(job)), log_of(job)
    assert not os.path.exists(sock(job.pid)), "the socket is still there"


# ---- refusals ----------------------------------------------------------------

def not_listening():
    plain = start_job(args=())
    try:
        time.sleep(0.3)
        refused(plain.pid, r"process %d is not an ember started with --listen" % plain.pid)
    finally:
        end_job(plain)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        refused(sleeper.pid, r"process %d is not an ember started with --listen" % sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def no_such_process():
    pid = dead_pid()
    refused(pid, r"no process %d" % pid)


def leave_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()   # the file stays, nobody listens
    os.chmod(path, 0o600)


def stale_socket_of_ended_job():
    pid = dead_pid()
    path = sock(pid)
    leave_socket(path)
    refused(pid, r"job %d has ended; removed the socket it left behind" % pid)
    assert not os.path.exists(path), "the stale socket is still there"


def stale_socket_of_reused_pid():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        path = sock(sleeper.pid)
        leave_socket(path)
        refused(sleeper.pid, r"process %d is not listening: .* left by an earlier job" % sleeper.pid)
        assert not os.path.exists(path), "the stale socket is still there"
    finally:
        sleeper.kill()
        sleeper.wait()


def other_users_job():
    # the job runs as nobody (uid 65534) with a runtime dir of its own
    other = os.path.join(tmp, "other")
    os.mkdir(other, 0o700)
    os.chown(other, 65534, 65534)
    j = start_job(prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
                  env_extra={"XDG_RUNTIME_DIR": other}, sockdir=os.path.join(other, "ember"))
    try:
        path = sock(j.pid, os.path.join(other, "ember"))
        assert os.path.exists(path), log_of(j)
        refused(j.pid, r"process %d belongs to another user \(uid 65534\)" % j.pid,
                {"XDG_RUNTIME_DIR": other})
        # past the client's checks: the job itself refuses (SO_PEERCRED)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        try:   # the job may have refused and closed already
            s.sendall(b"ember-attach 1 color=0\n")
        except OSError:
            pass
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        assert data == b"\x02job %d belongs to another user: only its owner may attach\n" % j.pid, data
        assert j.poll() is None
    finally:
        end_job(j)


def symlinked_directory_not_used():
    # $XDG_RUNTIME_DIR/ember a symbolic link: the job uses /tmp/ember-UID
    # instead, and the client looks there too
    xdg = os.path.join(tmp, "xdg")
    target = os.path.join(tmp, "elsewhere")
    os.mkdir(xdg, 0o700)
    os.mkdir(target, 0o700)
    os.symlink(target, os.path.join(xdg, "ember"))
    fallback = "/tmp/ember-%d" % os.getuid()
    j = start_job(env_extra={"XDG_RUNTIME_DIR": xdg}, sockdir=fallback)
    try:
        assert os.listdir(target) == [], os.listdir(target)
        assert os.path.exists(sock(j.pid, fallback)), log_of(j)
        q = attach(j.pid, {"XDG_RUNTIME_DIR": xdg})
        q.expect(r"attached: stopped")
        q.expect_exact(DBG)
        q.sendline("detach")
        q.expect(pexpect.EOF)
        q.close()
        assert q.exitstatus == 0, q.exitstatus
    finally:
        j.terminate()   # SIGTERM: the socket goes with it
        j.wait(10)
    assert not os.path.exists(sock(j.pid, fallback)), "the socket is still there"


# ---- the socket goes away -----------------------------------------------------

def env_opt_in_and_sigterm():
    j = start_job(args=(), env_extra={"EMBER_LISTEN": "1"})
    assert os.path.exists(sock(j.pid)), log_of(j)
    j.send_signal(signal.SIGTERM)
    j.wait(10)
    assert j.returncode == -signal.SIGTERM, j.returncode
    assert not os.path.exists(sock(j.pid)), "the socket is still there after SIGTERM"


def removed_after_an_error():
    j = start_job(script=FAIL)
    j.wait(10)
    assert j.returncode == 1, j.returncode
    assert "boom" in log_of(j), log_of(j)
    assert not os.path.exists(sock(j.pid)), "the socket is still there after the error"


try:
    check("--listen: a 0600 socket in a 0700 directory, announced on stderr", socket_modes)
    if job is not None and job.poll() is None:
        check("attach: the running line, p, bt, locals; a second client refused; continue, "
              "Ctrl-C pauses, detach", attach_inspect_and_refuse_second)
        check("a breakpoint set by the client; Ctrl-D detaches and deletes it; quit detaches",
              breakpoint_set_remotely)
        check("a client killed while the job runs: the job runs on, a new one attaches",
              client_killed_while_running)
        check("the job told to stop by the debugger ends; its socket is removed",
              told_to_stop_then_socket_removed)
    check("refused: an ember without --listen, and another program", not_listening)
    check("refused: no such process", no_such_process)
    check("a stale socket of a job that ended: said, and removed", stale_socket_of_ended_job)
    check("a stale socket under a process id in use again: said, and removed",
          stale_socket_of_reused_pid)
    if os.getuid() == 0 and os.path.exists("/usr/bin/setpriv"):
        check("refused: another user's job (by the client, and by the job: SO_PEERCRED)",
              other_users_job)
    else:
        report("refused: another user's job # SKIP needs root and setpriv", True)
    check("a symbolic link for the socket directory is not used: /tmp/ember-UID instead",
          symlinked_directory_not_used)
    check("EMBER_LISTEN=1 listens; SIGTERM removes the socket", env_opt_in_and_sigterm)
    check("the socket is removed when the script fails", removed_after_an_error)
finally:
    for j in jobs:
        if j.poll() is None:
            j.kill()
            j.wait()
    shutil.rmtree(tmp, ignore_errors=True)
done()
