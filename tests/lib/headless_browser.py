"""Headless Chromium driven through the DevTools protocol, with a minimal
WebSocket client of the standard library's (RFC 6455: masked text frames
out, unmasked frames in). Enough for tests to load a page, read what it
shows (Runtime.evaluate), click, and take screenshots.

    with Browser() as browser:
        browser.navigate("http://127.0.0.1:8500/ui/")
        browser.wait_for("document.querySelector('td.holder') !== null")
        png = browser.screenshot()
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

from tenure_testlib import poll_until


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    def __init__(self, url, timeout=30.0):
        assert url.startswith("ws://"), url
        rest = url[len("ws://"):]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the WebSocket handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError("DevTools refused the WebSocket: " + head.decode(errors="replace"))

    def send(self, text):
        data = text.encode()
        header = bytearray([0x81])
        if len(data) < 126:
            header.append(0x80 | len(data))
        elif len(data) < 65536:
            header.append(0x80 | 126)
            header += struct.pack("!H", len(data))
        else:
            header.append(0x80 | 127)
            header += struct.pack("!Q", len(data))
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(bytes(header) + mask + masked)

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("DevTools closed the WebSocket")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, length = b0 & 0x0F, b1 & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(length)
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode in (0x9, 0xA):
                continue  # ping/pong: Chromium sends none to clients
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self):
        self.sock.close()


class Browser:
    """A headless Chromium with its own profile, ended by its PID."""

    def __init__(self, width=1280, height=900, timeout=30.0):
        self.binary = chromium_binary()
        if self.binary is None:
            raise RuntimeError("chromium is not installed (scripts/setup installs it)")
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="tenure-chromium-")
        self.proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.ws = None
        try:
            port_file = os.path.join(self.profile, "DevToolsActivePort")

            def port_written():
                with open(port_file) as fh:
                    lines = fh.read().split()
                return int(lines[0]) if len(lines) >= 2 else None

            port = poll_until(port_written, timeout=timeout,
                              message="chromium never opened its DevTools port")
            pages = []

            def page_listed():
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                    pages[:] = [t for t in json.load(r) if t.get("type") == "page"]
                return bool(pages)

            poll_until(page_listed, timeout=timeout, message="chromium lists no page")
            self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"], timeout=timeout)
            self.call("Page.enable")
            self.call("Runtime.enable")
        except Exception:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.ws is not None:
            self.ws.close()
            self.ws = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == my_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
        raise TimeoutError(f"DevTools never answered {method}")

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def before_every_page(self, source):
        """Runs `source` in every page this browser loads next, before the
        page's own scripts (DevTools injects it: the page's CSP does not apply)."""
        self.call("Page.addScriptToEvaluateOnNewDocument", source=source)

    def navigate(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def wait_for(self, expression, timeout=30.0, message=None):
        """Polls the expression in the page until it is truthy; returns its value."""
        value = []

        # An element found counts as true (returnByValue would give {}).
        wrapped = f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"

        def ready():
            value[:] = [self.evaluate(wrapped)]
            return bool(value[0])

        poll_until(ready, timeout=timeout, interval=0.1,
                   message=message or f"page never showed: {expression}")
        return value[0]

    def text(self, selector):
        """The text of the first element the selector matches, None if none."""
        return self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " return e ? e.textContent : null; })()")

    def click(self, selector):
        if not self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                             " if (!e) return false; e.click(); return true; })()"):
            raise AssertionError(f"nothing to click at {selector}")

    def screenshot(self, path):
        """Saves a PNG of the whole page (its full height, the window's width)."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", width=self.width,
                  height=max(300, min(height, 4000)), deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        self.call("Emulation.clearDeviceMetricsOverride")
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
