"""Headless Chromium driven over the DevTools protocol, for the report's browser test.

Chromium is Debian's ``chromium`` package (``make browser`` installs it). It is
started with ``--remote-debugging-port=0``; the port it picked is read from
``DevToolsActivePort`` in its profile folder, and commands go over one
websocket (the ``websockets`` package, a dependency of Prefect). The page under
test carries no script: measurements are made by the DevTools client
(``Runtime.evaluate``), not by the document.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
)

#: Run by the DevTools client in the page: widths of the document, and the elements whose
#: right edge passes the viewport (for the failure message).
MEASURE = """JSON.stringify({
  viewport: document.documentElement.clientWidth,
  scrollWidth: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight,
  overflowing: Array.from(document.querySelectorAll('body *'))
    .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
    .slice(0, 5)
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')
      + ' right=' + Math.round(e.getBoundingClientRect().right))
})"""


def find_chromium() -> str | None:
    """Path of a Chromium executable, or None."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Shot:
    """A page rendered at one width: the PNG and what the layout measured (CSS pixels)."""

    png: bytes
    viewport: int
    scroll_width: int
    height: int
    overflowing: list[str]


class Chromium:
    """One headless Chromium process; use as a context manager.

    Args:
        executable: the browser binary.
        profile: an empty folder for its ``--user-data-dir``.
        timeout_s: how long to wait for start-up and for each page load.
    """

    def __init__(self, executable: str, profile: Path, timeout_s: float = 30.0) -> None:
        self.executable = executable
        self.profile = profile
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None

    def __enter__(self) -> Chromium:
        self.profile.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                self.executable,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout_s
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"{self.executable} did not start its DevTools endpoint")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self._ws = connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def _call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv(timeout=self.timeout_s))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def _wait_event(self, name: str, session: str) -> None:
        assert self._ws is not None
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            event = json.loads(self._ws.recv(timeout=self.timeout_s))
            if event.get("method") == name and event.get("sessionId") == session:
                return
        raise TimeoutError(f"no {name} within {self.timeout_s} s")

    def shoot(self, url: str, width: int, *, mobile: bool = False) -> Shot:
        """Open ``url`` in a new tab ``width`` CSS pixels wide and take a full-page PNG.

        ``mobile`` emulates a phone (the viewport meta tag applies).
        """
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            self._call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=800,
                deviceScaleFactor=1,
                mobile=mobile,
            )
            self._call("Page.enable", session)
            self._call("Page.navigate", session, url=url)
            self._wait_event("Page.loadEventFired", session)
            measured = json.loads(
                self._call("Runtime.evaluate", session, expression=MEASURE, returnByValue=True)[
                    "result"
                ]["value"]
            )
            height = int(measured["height"])
            shot = self._call(
                "Page.captureScreenshot",
                session,
                format="png",
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            )
        finally:
            self._call("Target.closeTarget", targetId=target)
        return Shot(
            png=base64.b64decode(shot["data"]),
            viewport=int(measured["viewport"]),
            scroll_width=int(measured["scrollWidth"]),
            height=height,
            overflowing=list(measured["overflowing"]),
        )
