"""Debian's jupyter_kernel_test conformance suite against `ember --kernel`.

Run by tests/shell/jupyter_test.sh (JUPYTER_PATH points at a temporary
kernelspec named "ember"); prints TAP, one line per test of the suite.
Not covered: test_clear_output (ember has no clear_output call: a cell
cannot erase its own output) and the suite skips it by itself."""
import os
import shutil
import sys
import unittest

import jupyter_kernel_test


class EmberKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "ember"
    language_name = "lua"
    file_extension = ".lua"

    code_hello_world = 'print("hello, world")'
    code_stderr = 'io.stderr:write("error\\n")'

    completion_samples = [
        {"text": "ember.zeros_l", "matches": {"ember.zeros_like"}},
        {"text": "string.up", "matches": {"string.upper"}},
    ]
    complete_code_samples = ["1", "x = 1", "for i = 1, 3 do print(i) end", ":time 1+1"]
    incomplete_code_samples = ["for i = 1, 3 do", "function f(x)", "t = {1, 2,"]
    invalid_code_samples = ["x = )", "1 1", "end"]

    code_page_something = "?ember.zeros"
    code_inspect_sample = "ember.zeros"
    code_generate_error = 'error("boom")'

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "'a' .. 'b'", "result": "ab"},
        {"code": "ember.tensor({1.5, 2})", "result": "tensor([1.5000, 2.0000])"},   # as PyTorch prints it
    ]
    code_history_pattern = "1 + ?"
    supported_history_operations = ("tail", "range", "search")

    if shutil.which(os.environ.get("EMBER_GNUPLOT", "gnuplot")):
        code_display_data = [
            {"code": "plot.line({1, 4, 9})", "mime": "image/png"},
            {"code": "local f = plot.figure{title = 't'}; f:line({1, 2}); f:show()", "mime": "image/png"},
        ]


class TapResult(unittest.TextTestResult):
    """One TAP line per test (subtests' failures folded into their test)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.n = 0
        self.bad = {}

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None and not issubclass(err[0], unittest.SkipTest):
            self.bad.setdefault(test.id(), []).append(f"{subtest}: {self._exc_info_to_string(err, test)}")

    def tap(self, test, status, detail=""):
        self.n += 1
        name = test.id().rsplit(".", 1)[-1]
        print(f"{status} {self.n} - {name}" if status != "skip" else f"ok {self.n} - {name} # SKIP {detail}")
        if status == "not ok":
            for line in detail.splitlines():
                print(f"# {line}")
        sys.stdout.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        if test.id() not in self.bad:
            self.tap(test, "ok")

    def stopTest(self, test):
        # a test whose subtests failed gets no addSuccess nor addFailure
        if test.id() in self.bad:
            self.tap(test, "not ok", "\n".join(self.bad.pop(test.id())))
        super().stopTest(test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.tap(test, "not ok", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self.tap(test, "not ok", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        why = {"test_clear_output": "ember has no clear_output call",
               "test_display_data": "no gnuplot to draw a figure"}.get(test.id().rsplit(".", 1)[-1], reason)
        self.tap(test, "skip", why or "skipped by the suite")


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(EmberKernelTests)
    runner = unittest.TextTestRunner(stream=open(os.devnull, "w"), resultclass=TapResult)
    result = runner.run(suite)
    print(f"1..{result.n}")
    sys.exit(0 if result.wasSuccessful() else 1)
