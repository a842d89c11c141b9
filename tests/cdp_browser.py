"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol
through --remote-debugging-pipe: commands and replies are JSON messages,
each ended by a NUL byte, on the browser's fds 3 (in) and 4 (out). Python's
standard library only.

    with Browser(out_dir) as b:
        b.open("http://127.0.0.1:9452/")
        rows = b.eval("document.querySelectorAll('tr').length")
        b.screenshot("jobs.png")
        assert not b.errors
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, width=1000, height=800):
        chromium = find_chromium()
        if chromium is None:
            raise RuntimeError("no chromium on PATH: ./hpt setup --tests installs Debian's chromium")
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=os.environ.get("TEST_TMPDIR"))
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes():
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire_pipes, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        self.errors = []  # console errors, exceptions, failed loads: one line each
        self.width = width
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable", session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:  # pylint: disable=broad-except
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.time() > deadline:
                raise TimeoutError("no message from chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _note(self, message):
        method, params = message.get("method", ""), message.get("params", {})
        self.events.append(message)
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.errors.append("console: " + " ".join(texts))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("exception: " + details.get("exception", {}).get(
                "description", details.get("text", "")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append("log: " + params["entry"].get("text", ""))
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            self.errors.append("load failed: " + params.get("errorText", ""))

    def call(self, method, params=None, session=False, timeout=30):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._note(reply)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while True:
            message = self._read_message(deadline)
            self._note(message)
            if message.get("method") == method:
                return message

    def open(self, url, timeout=30):
        """Navigates and waits for the load event."""
        result = self.call("Page.navigate", {"url": url}, session=True)
        if result.get("errorText"):
            raise RuntimeError(f"{url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired", timeout)

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def requests(self):
        """URLs the page asked for since it opened."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path):
        """The whole page, at the window's width."""
        height = int(self.eval("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        self.call("Emulation.clearDeviceMetricsOverride", session=True)
