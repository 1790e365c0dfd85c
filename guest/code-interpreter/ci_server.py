# SPDX-License-Identifier: GPL-2.0
"""The HTTP side of the code interpreter service (port 49999).

  POST   /execute               {code, context_id?, language?, env_vars?}
                                200, one JSON message per line (ci_results)
  POST   /contexts              {language?, cwd?} -> {id, language, cwd}
  GET    /contexts              [{id, language, cwd}...]
  DELETE /contexts/{id}         204
  POST   /contexts/{id}/restart 204
  GET    /health                200 "OK"

Errors are {"error": message} with 400 (bad request or language), 404
(no such context or path) or 500.  Answers are HTTP/1.0: the connection
closes after each, and /execute streams until it does.  A client that
closes its side while code runs cancels the execution (the kernel is
interrupted).
"""
import json
import os
import select
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ci_bash
import ci_jupyter
import ci_results

PORT = 49999
BODY_MAX = 16 * 1024 * 1024
LANGUAGES = {"python": "python", "python3": "python", "ipython": "python",
             "bash": "bash", "sh": "bash", "shell": "bash"}
KINDS = {"python": ci_jupyter.PythonContext, "bash": ci_bash.BashContext}


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def default_cwd():
    return "/home/user" if os.path.isdir("/home/user") else "/root"


def language_of(name):
    if name is None or name == "":
        return "python"
    lang = LANGUAGES.get(str(name).lower())
    if not lang:
        raise Refused(400, "language %r is not supported here (python, bash)" % name)
    return lang


class Contexts:
    """Every context, and the default one of each language."""

    def __init__(self):
        self.lock = threading.Lock()
        self.all = {}
        self.defaults = {}

    def create(self, language, cwd=None):
        lang = language_of(language)
        cwd = cwd or default_cwd()
        if not os.path.isdir(cwd):
            raise Refused(400, "cwd %s is not a directory" % cwd)
        ctx = KINDS[lang](str(uuid.uuid4()), cwd)
        with self.lock:
            self.all[ctx.id] = ctx
        return ctx

    def default(self, language):
        lang = language_of(language)
        with self.lock:
            ctx = self.defaults.get(lang)
        if ctx is None:
            ctx = self.create(lang)
            with self.lock:
                self.defaults.setdefault(lang, ctx)
                ctx = self.defaults[lang]
        return ctx

    def get(self, ctx_id):
        with self.lock:
            ctx = self.all.get(ctx_id)
        if ctx is None:
            raise Refused(404, "context %s not found" % ctx_id)
        return ctx

    def remove(self, ctx_id):
        with self.lock:
            ctx = self.all.pop(ctx_id, None)
            for lang, d in list(self.defaults.items()):
                if d is ctx:
                    del self.defaults[lang]
        if ctx is None:
            raise Refused(404, "context %s not found" % ctx_id)
        ctx.close()

    def list(self):
        with self.lock:
            return [c.describe() for c in self.all.values()]


def peer_closed(sock):
    """Whether the client closed its side (it sends nothing after a body)."""
    try:
        r, _, _ = select.select([sock], [], [], 0)
        if not r:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "cube-code-interpreter"
    contexts = None

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, obj=None):
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > BODY_MAX:
            raise Refused(413, "body too large")
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise Refused(400, "body is not JSON: %s" % e)
        if not isinstance(obj, dict):
            raise Refused(400, "body is not a JSON object")
        return obj

    def _route(self, method):
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
        elif method == "POST" and path == "/execute":
            self._execute()
        elif parts[0] == "contexts" and len(parts) == 1:
            if method == "POST":
                b = self._body()
                cwd = b.get("cwd")
                if cwd is not None and not isinstance(cwd, str):
                    raise Refused(400, "cwd must be a string")
                self._send(200, self.contexts.create(b.get("language"), cwd).describe())
            elif method == "GET":
                self._send(200, self.contexts.list())
            else:
                raise Refused(405, "method not allowed")
        elif parts[0] == "contexts" and len(parts) == 2 and method == "DELETE":
            self.contexts.remove(parts[1])
            self._send(204)
        elif (parts[0] == "contexts" and len(parts) == 3 and
              parts[2] == "restart" and method == "POST"):
            self.contexts.get(parts[1]).restart()
            self._send(204)
        else:
            raise Refused(404, "no such path: %s %s" % (method, path))

    def _execute(self):
        b = self._body()
        code = b.get("code")
        if not isinstance(code, str):
            raise Refused(400, "code must be a string")
        env = b.get("env_vars") or {}
        if not isinstance(env, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise Refused(400, "env_vars must be an object of strings")
        if b.get("context_id"):
            if b.get("language"):
                raise Refused(400, "give context_id or language, not both")
            ctx = self.contexts.get(b["context_id"])
        else:
            ctx = self.contexts.default(b.get("language"))
        if ctx.language == "bash":
            bad = ci_bash.BashContext.check_env(env)
            if bad:
                raise Refused(400, bad)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self.wfile.flush()
        gone = [False]

        def emit(msg):
            if gone[0]:
                return
            try:
                self.wfile.write(ci_results.line(msg))
                self.wfile.flush()
            except OSError:
                gone[0] = True

        def cancelled():
            if not gone[0] and peer_closed(self.connection):
                gone[0] = True
            return gone[0]

        ctx.execute(code, env, emit, cancelled)

    def _handle(self, method):
        try:
            self._route(method)
        except Refused as e:
            self._send(e.status, {"error": str(e)})
        except Exception as e:  # a broken kernel must not end the service
            try:
                self._send(500, {"error": "%s: %s" % (type(e).__name__, e)})
            except OSError:
                pass

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_DELETE(self):
        self._handle("DELETE")


def serve(addr="0.0.0.0", port=PORT, ready=None):
    """Start the default contexts (the warm-up), then serve forever."""
    contexts = Contexts()
    contexts.default("python")
    contexts.default("bash")
    Handler.contexts = contexts
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    httpd = ThreadingHTTPServer((addr, port), Handler)
    if ready:
        ready()
    httpd.serve_forever()
