# SPDX-License-Identifier: GPL-2.0
"""A Python context: one IPython kernel, driven with jupyter_client.

The kernel talks ZeroMQ over Unix sockets (the "ipc" transport) in
RUN_DIR, so it needs no loopback interface.  One execution runs at a time;
the iopub messages of that execution become the /execute messages
(ci_results).  When the client goes away or the time is up the kernel is
interrupted (SIGINT) and its "idle" awaited, so the context stays usable;
a kernel that does not come back is restarted.
"""
import json
import os
import queue
import threading
import time

from jupyter_client import KernelManager

import ci_results

RUN_DIR = "/run/cube-code-interpreter"
# Matplotlib's inline backend: figures come back as image/png display data.
KERNEL_ENV = {
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    "PYTHONUNBUFFERED": "1",
}
# Run once in every new kernel, silently (the execution count stays 0):
# plain tracebacks, and the modules users plot with loaded already.
WARM_UP = """
get_ipython().run_line_magic('colors', 'NoColor')
import matplotlib
import matplotlib.pyplot
import numpy
import pandas
"""
START_TIMEOUT = 600      # a kernel's start, generous for emulated machines
INTERRUPT_GRACE = 10     # seconds for an interrupted kernel to go idle
POLL = 0.2


class KernelError(Exception):
    pass


class PythonContext:
    language = "python"

    def __init__(self, ctx_id, cwd):
        self.id = ctx_id
        self.cwd = cwd
        self.lock = threading.Lock()
        self.km = None
        self.kc = None
        self._start()

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def _start(self):
        os.makedirs(RUN_DIR, exist_ok=True)
        km = KernelManager(kernel_name="python3", transport="ipc",
                           ip=os.path.join(RUN_DIR, "kernel-" + self.id))
        km.connection_file = os.path.join(RUN_DIR, "kernel-%s.json" % self.id)
        env = dict(os.environ)
        env.update(KERNEL_ENV)
        km.start_kernel(cwd=self.cwd, env=env)
        kc = km.blocking_client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=START_TIMEOUT)
        except RuntimeError as e:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            raise KernelError("the Python kernel did not start: %s" % e)
        self.km, self.kc = km, kc
        self._silent(WARM_UP, timeout=START_TIMEOUT)

    def _stop(self):
        if self.kc:
            self.kc.stop_channels()
        if self.km:
            self.km.shutdown_kernel(now=True)
            self.km.cleanup_resources()
        self.kc = self.km = None

    def restart(self):
        with self.lock:
            self._stop()
            self._start()

    def close(self):
        with self.lock:
            self._stop()

    def _silent(self, code, timeout=60):
        """Run code without output or history; its errors are ignored."""
        msg_id = self.kc.execute(code, silent=True, store_history=False,
                                 allow_stdin=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=POLL)
            except queue.Empty:
                continue
            if (msg["parent_header"].get("msg_id") == msg_id and
                    msg["msg_type"] == "status" and
                    msg["content"]["execution_state"] == "idle"):
                break
        self._drain_shell()

    def _drain_shell(self):
        while True:
            try:
                self.kc.get_shell_msg(timeout=0)
            except queue.Empty:
                return

    def execute(self, code, env_vars, emit, cancelled):
        """Run code; emit() each message; cancelled() says to interrupt."""
        with self.lock:
            if self.km is None or not self.km.is_alive():
                self._stop()
                self._start()
            if env_vars:
                self._silent(
                    "import os as _cube_os\n"
                    "_cube_env = %s\n"
                    "_cube_env_saved = {k: _cube_os.environ.get(k) for k in _cube_env}\n"
                    "_cube_os.environ.update(_cube_env)\n" % json.dumps(env_vars))
            try:
                self._run(code, emit, cancelled)
            finally:
                if env_vars:
                    self._silent(
                        "for _k, _v in _cube_env_saved.items():\n"
                        "    if _v is None: _cube_os.environ.pop(_k, None)\n"
                        "    else: _cube_os.environ[_k] = _v\n"
                        "del _cube_env, _cube_env_saved, _k, _v\n")

    def _run(self, code, emit, cancelled):
        msg_id = self.kc.execute(code, store_history=True, allow_stdin=False,
                                 stop_on_error=True)
        count = None
        interrupted = None
        while True:
            if interrupted is None and cancelled():
                self.km.interrupt_kernel()
                interrupted = time.monotonic()
            if interrupted and time.monotonic() - interrupted > INTERRUPT_GRACE:
                # it ignores SIGINT: a new kernel rather than a stuck one
                self._stop()
                self._start()
                return
            try:
                msg = self.kc.get_iopub_msg(timeout=POLL)
            except queue.Empty:
                if not self.km.is_alive():
                    emit(ci_results.error("KernelDied",
                                          "the Python kernel exited", ""))
                    self._stop()
                    self._start()
                    return
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, c = msg["msg_type"], msg["content"]
            if kind == "stream":
                emit(ci_results.stream(c["name"], c["text"]))
            elif kind == "execute_result":
                emit(ci_results.result(c["data"], True))
            elif kind == "display_data":
                emit(ci_results.result(c["data"], False))
            elif kind == "error":
                emit(ci_results.error(c["ename"], c["evalue"], c["traceback"]))
            elif kind == "execute_input":
                count = c.get("execution_count")
            elif kind == "status" and c["execution_state"] == "idle":
                break
        self._drain_shell()
        if count is not None:
            emit(ci_results.count(count))
