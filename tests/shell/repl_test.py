#!/usr/bin/env python3
"""repl_test.py — the interactive ember shell over a pseudo-terminal (TAP).

EMBER is the executable (tests/run.sh sets it); default build/ember.
Needs pexpect; without it every test is reported as skipped."""
import os
import re
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EMBER = os.environ.get("EMBER", os.path.join(ROOT, "build", "ember"))
TIMEOUT = 10

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import report, results, done  # noqa: E402

try:
    import pexpect
except ImportError:
    for name in ["repl over a pty"]:
        print("ok 1 - %s # SKIP pexpect is not installed" % name)
    print("1..1")
    sys.exit(0)


def spawn(history, args=()):
    env = dict(os.environ, EMBER_HISTORY=history, TERM="dumb", INPUTRC="/dev/null")
    env.pop("EMBER_INIT", None)
    return pexpect.spawn(EMBER, list(args), env=env, encoding="utf-8",
                         timeout=TIMEOUT, dimensions=(24, 200))


def check(name, fn):
    try:
        fn()
        report(name, True)
    except (pexpect.TIMEOUT, pexpect.EOF, AssertionError) as e:
        report(name, False, "%s: %s" % (type(e).__name__, e))


tmp = tempfile.mkdtemp()
history = os.path.join(tmp, "history")
p = spawn(history)


def banner_and_prompt():
    p.expect(r"ember \d+\.\d+\.\d+ \(Lua 5\.4\.\d+\)")
    p.expect_exact("> ")
    p.waitnoecho()


def expression_printed():
    p.sendline("1+1")
    p.expect(r"\r\n2\r\n")
    p.expect_exact("> ")


def tensor_printed():
    p.sendline("ember.tensor({{1.5, 2}, {3, 4}})")
    p.expect_exact("tensor([[1.5000, 2.0000],\r\n        [3.0000, 4.0000]])")
    p.expect_exact("> ")


def continuation_prompt():
    p.sendline("function f(a)")
    p.expect_exact("... ")
    p.sendline("  return a * 3")
    p.expect_exact("... ")
    p.sendline("end")
    p.expect_exact("> ")
    p.sendline("f(14)")
    p.expect(r"\r\n42\r\n")
    p.expect_exact("> ")


def error_goes_on():
    p.sendline('error("kaboom")')
    p.expect("kaboom")
    p.expect("stack traceback")
    p.expect_exact("> ")
    p.sendline("'still here'")
    p.expect("still here")
    p.expect_exact("> ")


def ctrl_c_interrupts_code():
    p.sendline("while true do end")
    import time
    time.sleep(0.3)
    p.sendintr()
    p.expect("interrupted!")
    p.expect_exact("> ")
    p.sendline("40 + 2")
    p.expect(r"\r\n42\r\n")
    p.expect_exact("> ")


def ctrl_c_drops_the_entry():
    p.send("function g()")
    p.sendline("")
    p.expect_exact("... ")
    p.sendintr()
    p.expect_exact("> ")
    p.sendline("g == nil")
    p.expect(r"\r\ntrue\r\n")
    p.expect_exact("> ")


def ctrl_c_at_prompt_keeps_session():
    p.send("1 + ")
    p.sendintr()
    p.expect_exact("> ")
    p.sendline("5 * 5")
    p.expect(r"\r\n25\r\n")
    p.expect_exact("> ")


def history_recall():
    p.sendline("hist_marker = 7")
    p.expect_exact("> ")
    p.send("\x1b[A")     # up arrow: the previous entry
    p.sendline("")
    p.expect_exact("> ")
    p.sendline("hist_marker")
    p.expect(r"\r\n7\r\n")
    p.expect_exact("> ")


def ctrl_d_exits():
    p.sendeof()
    p.expect(pexpect.EOF)
    p.close()
    assert p.exitstatus == 0, "exit status %r" % p.exitstatus


def history_saved():
    with open(history) as f:
        text = f.read()
    assert "hist_marker = 7" in text, text
    assert "1+1" in text, text
    # the multi-line function is one entry: timestamp lines separate entries
    assert re.search(r"#\d+\nfunction f\(a\)\n  return a \* 3\nend\n#\d+\n", text), text


def history_reloaded():
    q = spawn(history)
    q.expect_exact("> ")
    q.waitnoecho()
    q.send("\x1b[A")
    q.expect_exact("hist_marker")
    q.sendline("")
    q.expect_exact("> ")
    q.sendeof()
    q.expect(pexpect.EOF)


def history_capped():
    with open(history, "w") as f:
        for i in range(1500):
            f.write("x = %d\n" % i)
    q = spawn(history)
    q.expect_exact("> ")
    q.waitnoecho()
    q.sendline("last_one = 1")
    q.expect_exact("> ")
    q.sendeof()
    q.expect(pexpect.EOF)
    with open(history) as f:
        lines = [l for l in f.read().splitlines() if not re.match(r"#\d+$", l)]
    assert 990 <= len(lines) <= 1000, "%d lines (timestamps not counted)" % len(lines)
    assert lines[-1] == "last_one = 1", lines[-3:]


def interactive_after_script():
    script = os.path.join(tmp, "s.lua")
    with open(script, "w") as f:
        f.write("from_script = 99\n")
    q = spawn(history, ["-i", script])
    q.expect_exact("> ")
    # readline turns echo off once it owns the terminal; typing before that
    # races with its terminal set-up on a slow (sanitizer) build
    q.waitnoecho()
    q.sendline("from_script")
    q.expect(r"\r\n99\r\n")
    q.sendeof()
    q.expect(pexpect.EOF)


def basic_repl():
    """Without GNU Readline (EMBER_BASIC_REPL, as on a machine without the
    library): prompts, values, continuation, and Ctrl-C at the prompt, in an
    entry and in running code, as with Readline."""
    env = dict(os.environ, EMBER_HISTORY=os.path.join(tmp, "basic_history"), TERM="dumb",
               EMBER_BASIC_REPL="1")
    env.pop("EMBER_INIT", None)
    q = pexpect.spawn(EMBER, [], env=env, encoding="utf-8", timeout=TIMEOUT, dimensions=(24, 200))
    q.expect(r"ember \d+\.\d+\.\d+ \(Lua 5\.4\.\d+\)\r\n")
    i = q.expect_exact(["line editing is off", "> "])
    assert i == 1, "asked for, the basic REPL is not reported as a failure"
    q.sendline("1+1")
    q.expect(r"\r\n2\r\n")
    q.expect_exact("> ")
    q.sendline("function b(a)")
    q.expect_exact("... ")
    q.sendintr()
    q.expect_exact("> ")
    q.sendline("b == nil")
    q.expect(r"\r\ntrue\r\n")
    q.expect_exact("> ")
    q.send("1 + ")
    q.sendintr()
    q.expect_exact("> ")
    q.sendline("while true do end")
    import time
    time.sleep(0.3)
    q.sendintr()
    q.expect("interrupted!")
    q.expect_exact("> ")
    q.sendline("6 * 7")
    q.expect(r"\r\n42\r\n")
    q.expect_exact("> ")
    q.sendeof()
    q.expect(pexpect.EOF)
    q.close()
    assert q.exitstatus == 0, "exit status %r" % q.exitstatus


check("banner and prompt", banner_and_prompt)
check("an expression's value is printed", expression_printed)
check("a tensor prints PyTorch-style", tensor_printed)
check("continuation prompt for an unfinished function", continuation_prompt)
check("an error prints a traceback and the session goes on", error_goes_on)
check("Ctrl-C stops running code with 'interrupted!'", ctrl_c_interrupts_code)
check("Ctrl-C during continuation drops the entry", ctrl_c_drops_the_entry)
check("Ctrl-C at the prompt gives a new prompt", ctrl_c_at_prompt_keeps_session)
check("up arrow recalls the previous entry", history_recall)
check("Ctrl-D exits with status 0", ctrl_d_exits)
check("history is saved to EMBER_HISTORY", history_saved)
check("history is read back by the next session", history_reloaded)
check("history file is capped at 1000 lines", history_capped)
check("-i enters the REPL after a script", interactive_after_script)
check("without Readline (EMBER_BASIC_REPL): prompts and Ctrl-C as with it", basic_repl)
done()
