"""Load a page in a real headless Chromium and report what a person would see go wrong: images that did not
render and console errors. Speaks the DevTools protocol over a WebSocket (aiohttp comes with Ray)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

# The flags that work on these machines: no sandbox as root, and no background connections (the closed
# network refuses them, and they would show up as errors).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
IMAGES = """JSON.stringify([...document.images].map(i => ({alt: i.alt, complete: i.complete,
    width: i.naturalWidth, height: i.naturalHeight, shown: i.getBoundingClientRect().width})))"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def load(urls: list[str], timeout: float = 60) -> list[dict]:
    """For each url: {"title", "images": [{alt, complete, width, height, shown}], "errors": [text]}."""
    executable = chromium()
    assert executable is not None  # callers skip without Chromium
    # Chromium's helpers (renderer, crash handler) outlive its main process by a moment and may still write to the
    # profile as it is removed: they run in a process group of their own, which is stopped whole first.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + timeout
            while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("chromium did not open its DevTools port")
                time.sleep(0.1)
            port = int(port_file.read_text().splitlines()[0])
            return asyncio.run(asyncio.wait_for(_load_all(port, urls), timeout))
        finally:
            _stop_group(process)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to Chromium's process group, SIGKILL to what is left of it after 10 s; returns once it is gone
    (or, should a zombie linger unreaped, after 15 s)."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
    for tick in range(300):
        try:
            os.killpg(process.pid, signal.SIGKILL if tick >= 200 else 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


async def _load_all(port: int, urls: list[str]) -> list[dict]:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
            page = next(t for t in await response.json() if t["type"] == "page")
        async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            session = _Session(ws)
            for method in ("Page.enable", "Runtime.enable", "Log.enable"):
                await session.call(method)
            return [await session.load(url) for url in urls]


class _Session:
    def __init__(self, ws):
        self.ws, self.next_id, self.events = ws, 0, []

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads((await self.ws.receive()).data)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message)

    async def wait_for(self, event: str) -> None:
        while not any(e.get("method") == event for e in self.events):
            self.events.append(json.loads((await self.ws.receive()).data))

    async def load(self, url: str) -> dict:
        self.events = []
        await self.call("Page.navigate", url=url)
        await self.wait_for("Page.loadEventFired")
        images = json.loads(
            (await self.call("Runtime.evaluate", expression=IMAGES, returnByValue=True))["result"]["value"]
        )
        title = (await self.call("Runtime.evaluate", expression="document.title", returnByValue=True))["result"]
        return {"title": title["value"], "images": images, "errors": _errors(self.events)}


def _errors(events: list[dict]) -> list[str]:
    errors = []
    for e in events:
        params = e.get("params", {})
        if e.get("method") == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif e.get("method") == "Runtime.exceptionThrown":
            errors.append(params["exceptionDetails"].get("text", "exception"))
        elif e.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(params["entry"]["text"])
    return errors
