"""Drives `ember --kernel` with Debian's jupyter_client; prints TAP.

Run by tests/shell/jupyter_test.sh with JUPYTER_PATH pointing at a
temporary kernelspec (kernel name "ember"). Every check goes through the
real client: its session signs the messages, its channels parse the replies.
The kernel is always stopped before the script ends."""
import base64
import json
import os
import queue
import shutil
import sys
import tempfile
import time

import jupyter_client

TIMEOUT = 20
n = 0
failed = 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    if cond:
        print(f"ok {n} - {name}")
    else:
        failed += 1
        print(f"not ok {n} - {name}")
        for line in str(detail).splitlines():
            print(f"# {line}")
    sys.stdout.flush()


def skip(name, why):
    global n
    n += 1
    print(f"ok {n} - {name} # SKIP {why}")


def collect(kc, msg_id, timeout=TIMEOUT):
    """The iopub messages of request msg_id up to its idle status."""
    out = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        out.append(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    return out


def shell_reply(kc, msg_id, timeout=TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
        if m["parent_header"].get("msg_id") == msg_id:
            return m
    raise TimeoutError(f"no reply to {msg_id}")


def execute(kc, code, timeout=TIMEOUT):
    msg_id = kc.execute(code)
    reply = shell_reply(kc, msg_id, timeout)
    return reply["content"], collect(kc, msg_id, timeout)


def of_type(msgs, t):
    return [m["content"] for m in msgs if m["msg_type"] == t]


def stdout_of(msgs):
    return "".join(c["text"] for c in of_type(msgs, "stream") if c["name"] == "stdout")


def send_raw(kc, frames):
    """Puts frames on the shell socket as they are (after the delimiter)."""
    kc.shell_channel.socket.send_multipart([b"<IDS|MSG>"] + frames)


def signed_frames(kc, msg_type, content_bytes):
    msg = kc.session.msg(msg_type, {})
    parts = [json.dumps(msg["header"], default=str).encode(), b"{}", b"{}", content_bytes]
    return msg["header"]["msg_id"], [kc.session.sign(parts)] + parts


def alive_after(kc, what):
    """The kernel still answers kernel_info."""
    msg_id = kc.kernel_info()
    try:
        r = shell_reply(kc, msg_id, 10)
        ok(r["content"]["status"] == "ok", f"the kernel still answers after {what}")
    except Exception as e:
        ok(False, f"the kernel still answers after {what}", repr(e))


def no_shell_reply(kc, timeout=1.5):
    try:
        return kc.get_shell_msg(timeout=timeout)
    except queue.Empty:
        return None


def strict_unpack(frame):
    """A JSON frame as a strict reader takes it: jupyter_client's own unpacker
    replaces invalid UTF-8, which would hide it."""
    return json.loads(frame.decode("utf-8") if isinstance(frame, bytes) else frame)


def hostile_input(kc, log):
    """Signed messages a well-behaved client never sends."""
    # a NUL in the code: cJSON's strings end there, so print('first') alone
    # used to run (and reply ok); as an escape and as a raw byte
    for name, content in [("\\u0000", json.dumps({"code": "print('first')\u0000print('second')"}).encode()),
                          ("a raw NUL byte", b'{"code": "print(\'first\')\x00print(\'second\')"}')]:
        msg_id, frames = signed_frames(kc, "execute_request", content)
        send_raw(kc, frames)
        try:
            r = shell_reply(kc, msg_id)["content"]
            out = stdout_of(collect(kc, msg_id))
            ok(r["status"] == "error" and "NUL" in r["evalue"] and "first" not in out and "second" not in out,
               f"a NUL ({name}) in the code: refused with an error, none of it runs", (r, out))
        except Exception as e:  # noqa: BLE001 - the report names it
            ok(False, f"a NUL ({name}) in the code: refused with an error, none of it runs", repr(e))

    # a NUL in the msg_type: it was answered as kernel_info_request
    msg = kc.session.msg("kernel_info_request", {})
    msg["header"]["msg_type"] = "kernel_info_request\u0000_or_else"
    parts = [json.dumps(msg["header"], default=str).encode(), b"{}", b"{}", b"{}"]
    send_raw(kc, [kc.session.sign(parts)] + parts)
    m = no_shell_reply(kc)
    log.flush()
    with open(log.name, errors="replace") as f:
        logged = f.read()
    ok(m is None and "header holds a NUL" in logged, "a NUL in the msg_type: dropped and logged",
       m and m["msg_type"])
    alive_after(kc, "a NUL in the msg_type")

    # invalid UTF-8 (a stray byte, and a UTF-16 surrogate written as UTF-8) in
    # the code and in the header, which every reply echoes as its parent_header;
    # the replies are read strictly
    lenient, kc.session.unpack = kc.session.unpack, strict_unpack
    try:
        msg = kc.session.msg("execute_request", {})
        msg_id = msg["header"]["msg_id"]
        header = json.dumps(msg["header"], default=str).encode()
        assert b'"username": "' in header, header
        header = header.replace(b'"username": "', b'"username": "\xff', 1)
        parts = [header, b"{}", b"{}", b'{"code": "bad_utf8 = \'\xff\xed\xa0\x80\'"}']
        send_raw(kc, [kc.session.sign(parts)] + parts)
        want = "bad_utf8 = '\ufffd\ufffd\ufffd\ufffd'"
        name = "invalid UTF-8 in the code and the header: U+FFFD in execute_input and parent_header"
        try:
            r = shell_reply(kc, msg_id)
            code = of_type(collect(kc, msg_id), "execute_input")[0]["code"]
            ok(r["content"]["status"] == "ok" and code == want and r["parent_header"]["username"].startswith("\ufffd"),
               name, (r, code))
        except Exception as e:  # noqa: BLE001 - what the strict reader said
            ok(False, name, repr(e))
        try:
            h = shell_reply(kc, kc.history(hist_access_type="tail", n=1))["content"]
            ok([e[2] for e in h["history"]] == [want], "invalid UTF-8: U+FFFD in history_reply", h)
        except Exception as e:  # noqa: BLE001
            ok(False, "invalid UTF-8: U+FFFD in history_reply", repr(e))
        rep, msgs = execute(kc, "#bad_utf8")
        res = of_type(msgs, "execute_result")
        ok(res and res[0]["data"]["text/plain"] == "12", "the cleaned code ran (4 U+FFFD, 12 bytes)", msgs)

        # an unknown msg_type whose quote in the error is cut inside a character
        msg_id, frames = signed_frames(kc, "a" + "\u00e9" * 58 + "_request", b"{}")
        send_raw(kc, frames)
        try:
            r = shell_reply(kc, msg_id)["content"]
            ok(r["status"] == "error" and r["evalue"].endswith("\ufffd"),
               "an unknown msg_type quoted cut inside a character: still valid UTF-8", r)
        except Exception as e:  # noqa: BLE001
            ok(False, "an unknown msg_type quoted cut inside a character: still valid UTF-8", repr(e))
    finally:
        kc.session.unpack = lenient

    # a msg_type of a megabyte: logged cut short, not whole
    msg_id, frames = signed_frames(kc, "x" * 1_000_000 + "_request", b"{}")
    send_raw(kc, frames)
    no_shell_reply(kc)
    alive_after(kc, "a msg_type of a megabyte")
    log.flush()
    with open(log.name, errors="replace") as f:
        longest = max(len(line) for line in f)
    ok(longest < 1000, "a msg_type of a megabyte is logged cut short", f"a log line of {longest} characters")


def main():
    km = jupyter_client.KernelManager(kernel_name="ember")
    log = tempfile.NamedTemporaryFile("w+", prefix="ember-kernel-", suffix=".log", delete=False)
    km.start_kernel(stderr=log)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        run(km, kc, log)
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
        if failed or os.environ.get("SHOWLOG"):   # the kernel's own words (a sanitizer's report, say)
            log.seek(0)
            for line in log.read().splitlines()[-60:]:
                print(f"# kernel: {line}")
        log.close()
        os.unlink(log.name)
    print(f"1..{n}")
    return 1 if failed else 0


def run(km, kc, log):
    msg_id = kc.kernel_info()
    info = shell_reply(kc, msg_id)["content"]
    li = info.get("language_info", {})
    ok(info.get("status") == "ok" and info.get("protocol_version") == "5.3" and info.get("implementation") == "ember"
       and li.get("name") == "lua" and li.get("file_extension") == ".lua" and li.get("mimetype") == "text/x-lua"
       and info.get("banner") and isinstance(info.get("help_links"), list), "kernel_info", info)

    rep, msgs = execute(kc, "1+1")
    res = of_type(msgs, "execute_result")
    ok(rep["status"] == "ok" and len(res) == 1 and res[0]["data"]["text/plain"] == "2"
       and res[0]["execution_count"] == rep["execution_count"], "1+1 shows 2 as an execute_result", msgs)
    ok(of_type(msgs, "execute_input") and of_type(msgs, "execute_input")[0]["code"] == "1+1"
       and [c["execution_state"] for c in of_type(msgs, "status")] == ["busy", "idle"],
       "busy, execute_input, idle on iopub", msgs)
    count = rep["execution_count"]

    rep, msgs = execute(kc, "x = 3")
    ok(rep["status"] == "ok" and not of_type(msgs, "execute_result") and rep["execution_count"] == count + 1,
       "a statement shows nothing and counts", (rep, msgs))

    rep, msgs = execute(kc, 'print("hello", x); io.write("a", "b\\n"); io.stderr:write("warn\\n")')
    errs = "".join(c["text"] for c in of_type(msgs, "stream") if c["name"] == "stderr")
    ok(stdout_of(msgs) == "hello\t3\nab\n" and errs == "warn\n", "print and io.write as stdout, io.stderr as stderr",
       msgs)

    rep, msgs = execute(kc, "os.execute('echo from a child')")
    ok("from a child\n" in stdout_of(msgs), "a child process's output is a stream too", msgs)

    execute(kc, "7")
    rep, msgs = execute(kc, "_ * 3")
    res = of_type(msgs, "execute_result")
    ok(res and res[0]["data"]["text/plain"] == "21", "_ holds the last result", msgs)

    rep, msgs = execute(kc, "ember.tensor({1, 2}) * 2;")
    ok(not of_type(msgs, "execute_result"), "a trailing ; keeps the value from showing", msgs)

    rep, msgs = execute(kc, "local function f() error('boom') end\nf()")
    err = of_type(msgs, "error")
    ok(rep["status"] == "error" and "boom" in rep["evalue"] and rep["ename"] and err
       and any("traceback" in line for line in rep["traceback"]) and err[0]["evalue"] == rep["evalue"],
       "an error: error reply, iopub error, traceback", rep)
    rep, msgs = execute(kc, "x + 1")
    res = of_type(msgs, "execute_result")
    ok(rep["status"] == "ok" and res and res[0]["data"]["text/plain"] == "4", "the kernel survives the error", msgs)

    rep, msgs = execute(kc, "x = )")
    ok(rep["status"] == "error" and rep["ename"] == "SyntaxError", "a syntax error", rep)

    rep, msgs = execute(kc, ":time ember.ones(3):sum()")
    out = stdout_of(msgs)
    ok(rep["status"] == "ok" and "wall" in out and "3" in out, ":time goes through the shell's command", msgs)
    rep, msgs = execute(kc, ":mem")
    ok("Lua heap" in stdout_of(msgs), ":mem", msgs)
    rep, msgs = execute(kc, ":vars")
    ok("x" in stdout_of(msgs), ":vars lists x", msgs)
    # the debugging tools of the shell's commands, in a notebook
    rep, msgs = execute(kc, ":profile ember.ones(64, 64):matmul(ember.ones(64, 64)):sum()")
    out = stdout_of(msgs)
    ok(rep["status"] == "ok" and "Self CPU" in out and "matmul" in out and "Lua line" in out,
       ":profile prints the ops and the lines", msgs)
    execute(kc, "ember.memory.record_history(true)\nbig = ember.zeros(1000, 1000)")
    rep, msgs = execute(kc, ":mem top")
    out = stdout_of(msgs)
    ok(rep["status"] == "ok" and "4.00 MB" in out and "tracked:" in out, ":mem top lists the lines holding memory",
       msgs)
    execute(kc, "ember.memory.record_history(false)")
    execute(kc, ":nan on")
    rep, msgs = execute(kc, "bad = ember.tensor({-1.0}):sqrt()")
    text = stdout_of(msgs) + "".join(c["text"] for c in of_type(msgs, "stream") if c["name"] == "stderr")
    ok("sqrt made a NaN or an infinity" in text + str(rep.get("evalue", "")),
       ":nan on names the op that made a NaN (no prompt in a kernel)", (rep, msgs))
    execute(kc, ":nan off")

    rep, msgs = execute(kc, ":pm")
    errs = "".join(c["text"] for c in of_type(msgs, "stream") if c["name"] == "stderr")
    ok(rep["status"] == "ok" and "terminal" in errs, ":pm (the debugger's prompt) is refused in a kernel", msgs)
    # io.read() asks the front end: an input_request on stdin, answered with input_reply
    msg_id = kc.execute('print("before"); local a, n = io.read("l", "n"); print("got " .. a .. " and " .. n * 2)',
                        allow_stdin=True)
    try:
        asks = []
        for _ in range(2):
            req = kc.get_stdin_msg(timeout=TIMEOUT)
            asks.append(req)
            kc.input("hello world" if len(asks) == 1 else "21")
        rep = shell_reply(kc, msg_id)["content"]
        msgs = collect(kc, msg_id)
        ok(rep["status"] == "ok" and [a["msg_type"] for a in asks] == ["input_request"] * 2
           and asks[0]["parent_header"].get("msg_id") == msg_id
           and stdout_of(msgs) == "before\ngot hello world and 42\n",
           "io.read asks the front end (input_request), a line per format", (asks, msgs))
    except Exception as e:  # noqa: BLE001 - the report names it
        ok(False, "io.read asks the front end (input_request), a line per format", repr(e))
    # a front end that takes no input (nbconvert): a clear error, never a wait
    msg_id = kc.execute("io.read()", allow_stdin=False)
    rep = shell_reply(kc, msg_id)["content"]
    collect(kc, msg_id)
    ok(rep["status"] == "error" and "allow_stdin is false" in rep.get("evalue", ""),
       "io.read without allow_stdin: a clear error", rep)
    # Ctrl-C ends a wait for input; the kernel goes on
    msg_id = kc.execute("io.read()", allow_stdin=True)
    kc.get_stdin_msg(timeout=TIMEOUT)
    km.interrupt_kernel()
    rep = shell_reply(kc, msg_id)["content"]
    collect(kc, msg_id)
    ok(rep["status"] == "error" and "interrupted" in rep.get("evalue", ""), "an interrupt ends a wait for input", rep)
    msg_id = kc.execute("?ember.ones")
    rep = shell_reply(kc, msg_id)["content"]
    collect(kc, msg_id)
    page = rep.get("payload") and rep["payload"][0]
    ok(page and page["source"] == "page" and "ember.ones" in page["data"]["text/plain"], "?name pages the help", rep)

    before, _ = execute(kc, "nothing_here = 1")
    msg_id = kc.execute("silent_var = 5", silent=True)
    rep = shell_reply(kc, msg_id)["content"]
    msgs = collect(kc, msg_id)
    ok(rep["status"] == "ok" and not of_type(msgs, "execute_input"), "silent execute: no execute_input", msgs)
    rep, msgs = execute(kc, "silent_var")
    res = of_type(msgs, "execute_result")
    ok(res and res[0]["data"]["text/plain"] == "5" and rep["execution_count"] == before["execution_count"] + 1,
       "silent code ran and did not count", (rep, msgs))

    msg_id = kc.complete("local t = ember.ze", 18)
    c = shell_reply(kc, msg_id)["content"]
    ok(c["status"] == "ok" and "ember.zeros" in c["matches"] and c["cursor_start"] == 10 and c["cursor_end"] == 18,
       "complete ember.ze", c)
    msg_id = kc.complete("x = 1\nt:su", 10)
    c = shell_reply(kc, msg_id)["content"]
    ok(c["cursor_start"] == 6, "complete on a later line counts from the cell's start", c)

    msg_id = kc.inspect("ember.zeros(3)", 8)
    c = shell_reply(kc, msg_id)["content"]
    ok(c["status"] == "ok" and c["found"] and "ember.zeros(size" in c["data"]["text/plain"], "inspect ember.zeros",
       c)
    msg_id = kc.inspect("no_such_thing", 3)
    c = shell_reply(kc, msg_id)["content"]
    ok(c["status"] == "ok" and not c["found"], "inspect of an unknown name: found false", c)

    for code, want in [("for i=1,3 do", "incomplete"), ("x = 1", "complete"), ("x = )", "invalid"),
                       ("function f()\n  return 1", "incomplete"), ("y = 1 +", "incomplete"),
                       (":time 1+1", "complete")]:
        msg_id = kc.is_complete(code)
        c = shell_reply(kc, msg_id)["content"]
        ok(c["status"] == want and (want != "incomplete" or "indent" in c), f"is_complete {code!r}: {want}", c)

    # interrupt: SIGINT (interrupt_mode signal), then the control channel's interrupt_request
    execute(kc, "keep = 42")
    for how in ["signal", "interrupt_request"]:
        msg_id = kc.execute("while true do end")
        time.sleep(1.5)
        if how == "signal":
            ok(kc.hb_channel.is_beating(), "the heartbeat answers while a cell runs")
            km.interrupt_kernel()
        else:
            req = kc.session.msg("interrupt_request", {})
            kc.control_channel.send(req)
            r = kc.get_control_msg(timeout=TIMEOUT)
            ok(r["msg_type"] == "interrupt_reply" and r["parent_header"]["msg_id"] == req["header"]["msg_id"],
               "interrupt_reply on the control channel", r["content"])
        try:
            rep = shell_reply(kc, msg_id, 15)["content"]
            collect(kc, msg_id)
            ok(rep["status"] == "error" and "interrupted" in rep["evalue"], f"a busy loop is interrupted ({how})", rep)
        except Exception as e:
            ok(False, f"a busy loop is interrupted ({how})", repr(e))
            return
        rep, msgs = execute(kc, "keep")
        res = of_type(msgs, "execute_result")
        ok(res and res[0]["data"]["text/plain"] == "42", f"globals survive the interrupt ({how})", msgs)

    msg_id = kc.history(hist_access_type="tail", n=3)
    h = shell_reply(kc, msg_id)["content"]
    ok(h["status"] == "ok" and len(h["history"]) == 3 and h["history"][-1][2] == "keep", "history tail", h)
    msg_id = kc.history(hist_access_type="range", session=0, start=1, stop=3)
    h = shell_reply(kc, msg_id)["content"]
    ok([e[2] for e in h["history"]] == ["1+1", "x = 3"], "history range", h)
    msg_id = kc.history(hist_access_type="search", pattern="kee*", n=1)
    h = shell_reply(kc, msg_id)["content"]
    ok([e[2] for e in h["history"]] == ["keep"], "history search", h)

    if shutil.which(os.environ.get("EMBER_GNUPLOT", "gnuplot")):
        rep, msgs = execute(kc, "print('before'); plot.line({3, 2, 1.5, 1}, {title = 'loss'}); print('after')",
                            timeout=60)
        disp = of_type(msgs, "display_data")
        png = base64.b64decode(disp[0]["data"]["image/png"]) if disp else b""
        ok(rep["status"] == "ok" and png[:8] == b"\x89PNG\r\n\x1a\n" and "text/plain" in disp[0]["data"],
           "an ember.plot figure is a PNG display_data", rep)
        order = [m["msg_type"] for m in msgs if m["msg_type"] in ("stream", "display_data")]
        ok(order[0] == "stream" and order[-1] == "stream" and "display_data" in order[1:-1],
           "the figure comes between the prints around it", order)
    else:
        skip("an ember.plot figure is a PNG display_data", "no gnuplot")
        skip("the figure comes between the prints around it", "no gnuplot")


    # bad messages
    frames = [b"0" * 64, json.dumps(kc.session.msg("kernel_info_request", {})["header"], default=str).encode(), b"{}", b"{}", b"{}"]
    send_raw(kc, frames)
    try:
        m = kc.get_shell_msg(timeout=1.5)
        ok(False, "a message with a bad signature gets no reply", m)
    except Exception:
        ok(True, "a message with a bad signature gets no reply")
    log.flush()
    with open(log.name) as f:
        ok("bad signature" in f.read(), "the bad signature is logged on stderr")
    alive_after(kc, "a bad signature")

    msg_id, frames = signed_frames(kc, "execute_request", b"{not json")
    send_raw(kc, frames)
    r = shell_reply(kc, msg_id)
    ok(r["msg_type"] == "execute_reply" and r["content"]["status"] == "error", "malformed JSON content: an error reply",
       r["content"])
    send_raw(kc, [kc.session.sign([b"{oops", b"{}", b"{}", b"{}"]), b"{oops", b"{}", b"{}", b"{}"])
    send_raw(kc, [b"only one frame"])
    alive_after(kc, "malformed messages")

    hostile_input(kc, log)

    msg_id = kc.execute("")   # keeps the client's pending replies in order
    shell_reply(kc, msg_id)
    msg_id, frames = signed_frames(kc, "no_such_request", b"{}")
    send_raw(kc, frames)
    r = shell_reply(kc, msg_id)
    ok(r["msg_type"] == "no_such_reply" and r["content"]["status"] == "error", "unknown msg_type: an error reply",
       r["content"])
    msg_id = kc.comm_info()
    r = shell_reply(kc, msg_id)["content"]
    ok(r["status"] == "ok" and r["comms"] == {}, "comm_info: no comms", r)
    alive_after(kc, "an unknown message type")

    msg_id = kc.shutdown()
    r = kc.get_control_msg(timeout=TIMEOUT)
    ok(r["msg_type"] == "shutdown_reply" and r["parent_header"]["msg_id"] == msg_id and r["content"]["status"] == "ok",
       "shutdown_reply", r["content"])
    proc = km.provisioner.process if km.provisioner else None
    deadline = time.time() + 10
    while proc and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    ok(proc is not None and proc.poll() == 0, "the kernel exits cleanly after shutdown_request",
       proc and proc.poll())


if __name__ == "__main__":
    sys.exit(main())
