# SPDX-License-Identifier: GPL-2.0
"""The messages of POST /execute, one JSON object per line.

Jupyter's MIME bundles become the result objects of @e2b/code-interpreter:
each MIME type has a short key (text, html, png...); types without one
keep their MIME name, which the SDK reports under Result.extra.
"""
import json

MIME_KEYS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
}


def result(bundle, is_main):
    """A display_data or execute_result bundle as a "result" message."""
    out = {"type": "result", "is_main_result": bool(is_main)}
    for mime, value in bundle.items():
        key = MIME_KEYS.get(mime, mime)
        if isinstance(value, str) and mime.startswith("image/") and mime != "image/svg+xml":
            value = value.strip()
        out[key] = value
    return out


def stream(name, text):
    """A stream message: name is "stdout" or "stderr"."""
    return {"type": "stderr" if name == "stderr" else "stdout", "text": text}


def error(name, value, traceback):
    """An exception: traceback is one string, its lines joined."""
    if isinstance(traceback, (list, tuple)):
        traceback = "\n".join(traceback)
    return {"type": "error", "name": name, "value": value, "traceback": traceback}


def count(n):
    """The end of an execution, with the context's execution count."""
    return {"type": "number_of_executions", "execution_count": n}


def line(msg):
    """One message as the bytes of its line."""
    return (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
