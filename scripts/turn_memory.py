#!/usr/bin/env python3
"""Memory of one big echo turn (issue 13 item 1; docs/reliability.md).

Starts `zeroclaw daemon` (BIN, default target/debug/zeroclaw) with a fresh
config dir, opens a session in MODE (acp or chat), sends one prompt
(default `::chunk 65536\n::repeat 16000000 y`), reads every frame up to the
answer, then prints the daemon's VmHWM (peak) and, 1 s after the answer,
VmRSS (resident), in MiB and as multiples of the content.

    scripts/turn_memory.py [--bin PATH] [--mode acp|chat] [--runs N] [--turns T]
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, threading, time

def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)

class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.n = 0
    def send(self, method, params, notify=False):
        self.n += 1
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            msg["id"] = self.n
        self.s.sendall(json.dumps(msg).encode() + b"\n")
        return self.n
    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("daemon closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line
    def until(self, rid):
        while True:
            line = self.line()
            if line.startswith(b'{"jsonrpc":"2.0","method"'):
                self.last_update = time.monotonic()
                continue  # updates: skipped unparsed
            v = json.loads(line)
            if v.get("id") == rid:
                return v
    def call(self, method, params):
        return self.until(self.send(method, params))

def run(bin_path, mode, prompt, turns):
    d = tempfile.mkdtemp(prefix="ztm")
    cfg = os.path.join(d, "cfg")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
    env["HOME"] = d
    p = subprocess.Popen([bin_path, "daemon", "--config-dir", cfg], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    try:
        ready = json.loads(p.stdout.readline())
        c = Client(ready["endpoint"])
        assert "result" in c.call("initialize", {"protocolVersion": 1})
        r = c.call("session/new", {"agent_alias": "echo", "session_id": "m", "chat_mode": mode})
        assert "result" in r, r
        base = status_kib(p.pid, "VmRSS")
        # VmRSS sampled every 2 ms: the peak while the chunks stream, and
        # between the last chunk and the answer (finalization).
        samples, stop = [], threading.Event()
        def sample():
            while not stop.is_set():
                samples.append((time.monotonic(), status_kib(p.pid, "VmRSS")))
                time.sleep(0.002)
        t = threading.Thread(target=sample)
        t.start()
        for _ in range(turns):
            a = c.call("session/prompt", {"session_id": "m", "prompt": prompt})
            assert "result" in a, a
        answered = time.monotonic()
        stop.set()
        t.join()
        hwm = status_kib(p.pid, "VmHWM")
        last = getattr(c, "last_update", answered)
        streaming = max([k for (ts, k) in samples if ts <= last] or [0])
        finalizing = max([k for (ts, k) in samples if last < ts <= answered] or [0])
        print(f"  sampled RSS peak: streaming {streaming // 1024} MiB, "
              f"after the last chunk {finalizing // 1024} MiB")
        time.sleep(1)
        rss = status_kib(p.pid, "VmRSS")
        return base, hwm, rss
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/zeroclaw")
    ap.add_argument("--mode", default="acp")
    ap.add_argument("--prompt", default="::chunk 65536\n::repeat 16000000 y")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=1)
    a = ap.parse_args()
    content_mib = 16000000 / 2**20
    for i in range(a.runs):
        base, hwm, rss = run(a.bin, a.mode, a.prompt, a.turns)
        print(f"{a.mode} run {i + 1}: before {base // 1024} MiB, peak {hwm // 1024} MiB "
              f"({hwm / 1024 / content_mib:.1f}x), resident 1 s after {rss // 1024} MiB "
              f"({rss / 1024 / content_mib:.1f}x)")

if __name__ == "__main__":
    main()
