#!/usr/bin/env python3
"""The jitexpr REPL through a real pseudo-terminal (pexpect): editing, history recall and
persistence, tab completion, Ctrl-C, errors, multi-line input, Ctrl-D.

usage: repl_test.py PATH/TO/jitexpr [unittest options]
Exits 77 (CTest: skipped) when pexpect is not installed. Tests of line editing skip when the
binary was built without readline.
"""
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import pexpect
except ImportError:  # pragma: no cover
    print("repl_test.py: pexpect is not installed; skipping")
    sys.exit(77)

JITEXPR = None
HAS_READLINE = False

UP = "\x1b[A"
LEFT = "\x1b[D"
PROMPT = ">>> "


class Repl(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="jitexpr_repl_test_")
        self.state = self._tmp.name
        self.children = []

    def tearDown(self):
        for c in self.children:
            if c.isalive():
                c.terminate(force=True)
        self._tmp.cleanup()

    def spawn(self):
        env = dict(os.environ)
        env.update({"XDG_STATE_HOME": self.state, "TERM": "xterm", "JITEXPR_BACKEND": "cpu",
                    "JITEXPR_DISK_CACHE": "0", "INPUTRC": os.devnull})
        child = pexpect.spawn(JITEXPR, [], env=env, encoding="utf-8", timeout=60, dimensions=(40, 200))
        self.children.append(child)
        child.expect_exact(PROMPT)
        return child

    def line(self, child, text, expect):
        """Sends a line and waits for `expect` (exact text), then the next prompt."""
        child.send(text + "\r")
        child.expect_exact(expect)
        child.expect_exact(PROMPT)

    def need_readline(self):
        if not HAS_READLINE:
            self.skipTest("built without readline")

    def test_error_does_not_end_the_session(self):
        c = self.spawn()
        self.line(c, "nope + 1", "name error")
        self.line(c, "2 * 3", "array(6, dtype=int64)")

    def test_ctrl_d_exits_with_status_0(self):
        c = self.spawn()
        c.sendeof()
        c.expect(pexpect.EOF)
        c.close()
        self.assertEqual(c.exitstatus, 0)

    def test_quit_command_exits_with_status_0(self):
        c = self.spawn()
        c.send(":quit\r")
        c.expect(pexpect.EOF)
        c.close()
        self.assertEqual(c.exitstatus, 0)

    def test_ctrl_c_abandons_the_line(self):
        c = self.spawn()
        c.send("abandoned_name + ")
        c.expect_exact("abandoned_name + ")  # echoed: the REPL holds the partial line
        c.sendintr()
        c.expect_exact(PROMPT)  # a fresh prompt (whether "^C" is echoed depends on the tty)
        self.line(c, "1 + 1", "array(2, dtype=int64)")
        self.assertNotIn("abandoned_name", c.before)
        self.assertNotIn("name error", c.before)

    def test_ctrl_c_abandons_a_multi_line_statement(self):
        c = self.spawn()
        c.send("(1 +\r")
        c.expect_exact("... ")
        c.sendintr()
        c.expect_exact(PROMPT)
        self.line(c, "5", "array(5, dtype=int64)")

    def test_open_bracket_continues_on_next_line(self):
        c = self.spawn()
        c.send("x = (1 +\r")
        c.expect_exact("... ")
        c.send("2)\r")
        c.expect_exact(PROMPT)
        self.line(c, "x", "array(3, dtype=int64)")

    def test_vars_lists_variables(self):
        c = self.spawn()
        self.line(c, "v = zeros(2, 3, dtype=float32)", "")
        self.line(c, ":vars", "v     float32  (2, 3)  cpu")

    def test_unknown_command_is_reported(self):
        c = self.spawn()
        self.line(c, ":frobnicate", "unknown command")
        self.line(c, "7", "array(7, dtype=int64)")

    def test_editing_moves_left_and_inserts(self):
        self.need_readline()
        c = self.spawn()
        c.send("x = 12" + LEFT + "3" + "\r")
        c.expect_exact(PROMPT)
        self.line(c, "x", "array(132, dtype=int64)")

    def test_up_arrow_recalls_the_previous_line(self):
        self.need_readline()
        c = self.spawn()
        self.line(c, "y = 40", "")
        self.line(c, "y + 2", "array(42, dtype=int64)")
        self.line(c, "y = 50", "")
        c.send(UP + UP + "\r")
        c.expect_exact("array(52, dtype=int64)")

    def test_history_persists_to_the_next_session(self):
        self.need_readline()
        c = self.spawn()
        self.line(c, "persisted = 17", "")
        c.sendeof()
        c.expect(pexpect.EOF)
        c.close()
        self.assertTrue(os.path.exists(os.path.join(self.state, "jitexpr", "history")))
        c = self.spawn()
        c.send(UP + "\r")
        c.expect_exact(PROMPT)
        self.line(c, "persisted", "array(17, dtype=int64)")

    def test_tab_completes_a_variable(self):
        self.need_readline()
        c = self.spawn()
        self.line(c, "longvariablename = 9", "")
        c.send("longvar\t")
        c.expect_exact("longvariablename")
        c.send("\r")
        c.expect_exact("array(9, dtype=int64)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    JITEXPR = os.path.abspath(sys.argv.pop(1))
    version = subprocess.run([JITEXPR, "--version"], capture_output=True, text=True).stdout
    HAS_READLINE = "line editing: readline" in version
    unittest.main()
