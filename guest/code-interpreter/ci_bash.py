# SPDX-License-Identifier: GPL-2.0
"""A bash context: one long-lived bash, so variables, functions and the
working directory persist between executions as in a kernel.

Debian packages no Jupyter kernel for bash, so the service drives bash
itself: each execution's code is written to a file that the shell sources,
followed by a marker (a random token and the exit status) on stdout and on
stderr; output up to the markers is the execution's.  A non-zero status
becomes an "error" message.  Cancelling sends SIGINT to the shell's process
group (the shell traps it and goes on to the markers); a shell that does
not reach them is replaced by a new one.
"""
import codecs
import os
import re
import secrets
import select
import shlex
import signal
import subprocess
import threading
import time

import ci_results

RUN_DIR = "/run/cube-code-interpreter"
INTERRUPT_GRACE = 5
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class BashContext:
    language = "bash"

    def __init__(self, ctx_id, cwd):
        self.id = ctx_id
        self.cwd = cwd
        self.lock = threading.Lock()
        self.count = 0
        self.proc = None
        self._start()

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def _start(self):
        os.makedirs(RUN_DIR, exist_ok=True)
        self.token = secrets.token_hex(16)
        self.proc = subprocess.Popen(
            ["/bin/bash", "--noprofile", "--norc"], cwd=self.cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.proc.stdin.write(b"trap : INT\n")
        self.proc.stdin.flush()

    def _stop(self):
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                f.close()
        self.proc = None

    def restart(self):
        with self.lock:
            self._stop()
            self.count = 0
            self._start()

    def close(self):
        with self.lock:
            self._stop()

    @staticmethod
    def check_env(env_vars):
        for k in env_vars:
            if not NAME_RE.match(k):
                return "environment variable name %r is not valid in bash" % k
        return None

    def _script(self, code, env_vars):
        pre, post = [], []
        for i, (k, v) in enumerate(env_vars.items()):
            pre.append('if [ -n "${%s+x}" ]; then _cube_had%d=1 _cube_old%d=$%s; '
                       'else _cube_had%d=; fi; export %s=%s'
                       % (k, i, i, k, i, k, shlex.quote(v)))
            post.append('if [ -n "$_cube_had%d" ]; then %s=$_cube_old%d; else unset %s; fi; '
                        'unset _cube_had%d _cube_old%d' % (i, k, i, k, i, i))
        path = os.path.join(RUN_DIR, "bash-%s.sh" % self.id)
        with open(path, "w") as f:
            f.write(code)
            if not code.endswith("\n"):
                f.write("\n")
        mark = "\x1e%s\x1e" % self.token
        return ("\n".join(pre) + "\n. %s\n_cube_rc=$?\n" % shlex.quote(path) +
                "\n".join(post) +
                "\nprintf '%s%%d\\n' $_cube_rc; printf '%s\\n' >&2\n" % (mark, mark))

    def execute(self, code, env_vars, emit, cancelled):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._stop()
                self._start()
            self.count += 1
            script = self._script(code, env_vars or {})
            try:
                self.proc.stdin.write(script.encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                self._stop()
                self._start()
                emit(ci_results.error("Error", "bash exited", ""))
                return
            rc = self._collect(emit, cancelled)
            if rc is None:
                return
            if rc != 0:
                emit(ci_results.error("Error", str(rc), "exit status %d" % rc))
            emit(ci_results.count(self.count))

    def _collect(self, emit, cancelled):
        """Output up to both markers; the exit status, None if bash died."""
        mark = ("\x1e%s\x1e" % self.token).encode()
        fds = {self.proc.stdout.fileno(): "stdout",
               self.proc.stderr.fileno(): "stderr"}
        bufs = {"stdout": b"", "stderr": b""}
        done = {"stdout": None, "stderr": None}
        text = {n: codecs.getincrementaldecoder("utf-8")("replace") for n in bufs}
        interrupted = None
        while done["stdout"] is None or done["stderr"] is None:
            if interrupted is None and cancelled():
                try:
                    os.killpg(self.proc.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
                interrupted = time.monotonic()
            if interrupted and time.monotonic() - interrupted > INTERRUPT_GRACE:
                self._stop()
                self._start()
                return None
            live = [fd for fd, n in fds.items() if done[n] is None]
            ready, _, _ = select.select(live, [], [], 0.2)
            for fd in ready:
                name = fds[fd]
                data = os.read(fd, 65536)
                if not data:
                    self._stop()
                    self._start()
                    emit(ci_results.error("Error", "bash exited", ""))
                    return None
                buf = bufs[name] + data
                at = buf.find(mark)
                if at >= 0:
                    out, rest = buf[:at], buf[at + len(mark):]
                    done[name] = rest
                else:
                    # keep back only what may be the start of the marker
                    at = buf.rfind(b"\x1e", max(0, len(buf) - len(mark) + 1))
                    if at >= 0 and mark.startswith(buf[at:]):
                        out, buf = buf[:at], buf[at:]
                    else:
                        out, buf = buf, b""
                    at = -1
                bufs[name] = buf if at < 0 else b""
                out = text[name].decode(out, final=at >= 0)
                if out:
                    emit(ci_results.stream(name, out))
        status = done["stdout"].split(b"\n", 1)[0]
        try:
            return int(status)
        except ValueError:
            return 1
