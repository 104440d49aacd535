"""Headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4; no websocket needed).

``load(page)`` opens a file with the network blocked, waits for the load event and for
the page to settle, and returns the console errors, uncaught exceptions and failed loads
it saw, the result of a JavaScript expression, and a PNG screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

NAMES = ("chromium", "chromium-browser", "google-chrome")


def find() -> Optional[str]:
    """The Chromium executable, or None."""
    return next((p for p in (shutil.which(n) for n in NAMES) if p), None)


@dataclass
class Loaded:
    """What a page did while it loaded."""

    errors: list[str] = field(default_factory=list)
    value: Any = None
    screenshot: bytes = b""


class Browser:
    """One headless Chromium; use as a context manager."""

    def __init__(self, executable: str, timeout_s: float = 240.0) -> None:
        self.timeout_s = timeout_s
        self._profile = tempfile.mkdtemp(prefix="tensorwire-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends above 9, so that putting them on 3 and 4 cannot overwrite either.
        to_child_r, from_child_w = (self._above_nine(fd) for fd in (to_child_r, from_child_w))
        args = [
            executable,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--window-size=1400,1000",
            # No network: anything the page tries to fetch fails, and shows up as an error.
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        # A Python trampoline puts the pipe ends on descriptors 3 and 4, where Chromium expects them
        # (Debian's /bin/sh cannot redirect descriptors above 9).
        trampoline = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", trampoline, str(to_child_r), str(from_child_w), *args],
            pass_fds=(to_child_r, from_child_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    @staticmethod
    def _above_nine(fd: int) -> int:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except OSError:
            pass
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol -------------------------------------------------------------------------
    def _send(self, method: str, params: Optional[dict[str, Any]] = None, session: Optional[str] = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self, method: str, params: Optional[dict[str, Any]] = None, session: Optional[str] = None
    ) -> dict[str, Any]:
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = self._read(deadline)
            if msg.get("id") == wanted:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self._events.append(msg)

    def wait_event(self, method: str, deadline: float) -> dict[str, Any]:
        for i, e in enumerate(self._events):
            if e["method"] == method:
                return self._events.pop(i)
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self._events.append(msg)

    # -- what the tests use ---------------------------------------------------------------
    def load(self, page: Path, expression: str = "null", settle_s: float = 1.0) -> Loaded:
        """Opens ``page``, waits for its load event and ``settle_s`` more, evaluates ``expression``
        (a JSON-able value), takes a full-page screenshot, and lists every error seen."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired", time.monotonic() + self.timeout_s)
        end = time.monotonic() + settle_s
        while time.monotonic() < end:  # let pending script and rendering finish, collecting events
            self.call("Runtime.evaluate", {"expression": "1"}, session=session)
            time.sleep(0.1)
        value = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=session
        )
        metrics = self.call("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            },
            session=session,
        )
        loaded = Loaded(value=value.get("result", {}).get("value"), screenshot=base64.b64decode(shot["data"]))
        for e in self._events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                loaded.errors.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                loaded.errors.append(
                    "console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
                )
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                entry = p["entry"]
                loaded.errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
        self._events.clear()
        self.call("Target.closeTarget", {"targetId": target})
        return loaded
