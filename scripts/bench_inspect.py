#!/usr/bin/env python3
"""Benchmark `vramfit inspect` on a catalog model, a local GGUF and a remote GGUF.

The GGUF is a real-format v3 file for a Llama-3.1-8B Q4_K_M layout with a full 128,256-token
vocabulary and 280,147 merges in its header (what dominates header parsing), and a sparse data
section of the real size. The remote case serves it from 127.0.0.1 with HTTP range support.

Usage: python3 scripts/bench_inspect.py target/release/vramfit [RUNS]
"""
import http.server, json, os, statistics, struct, subprocess, sys, tempfile, threading, time

GGML = {"f32": 0, "f16": 1, "q4_K": 12, "q6_K": 14}
BLOCK = {"f32": (1, 4), "f16": (1, 2), "q4_K": (256, 144), "q6_K": (256, 210)}


def llama_tensors():
    """(name, dims in ggml order, type) of a Q4_K_M Llama-3.1-8B (the llama-quantize mix)."""
    t = [("token_embd.weight", [4096, 128256], "q4_K")]
    n = 32
    for i in range(n):
        more = i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
        p = f"blk.{i}."
        t += [(p + "attn_norm.weight", [4096], "f32"), (p + "ffn_norm.weight", [4096], "f32"),
              (p + "attn_q.weight", [4096, 4096], "q4_K"), (p + "attn_k.weight", [4096, 1024], "q4_K"),
              (p + "attn_v.weight", [4096, 1024], "q6_K" if more else "q4_K"),
              (p + "attn_output.weight", [4096, 4096], "q4_K"),
              (p + "ffn_gate.weight", [4096, 14336], "q4_K"), (p + "ffn_up.weight", [4096, 14336], "q4_K"),
              (p + "ffn_down.weight", [14336, 4096], "q6_K" if more else "q4_K")]
    t += [("output_norm.weight", [4096], "f32"), ("output.weight", [4096, 128256], "q6_K")]
    return t


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path):
    kv = [("general.architecture", 8, "llama"), ("llama.block_count", 4, 32), ("llama.context_length", 4, 131072),
          ("llama.embedding_length", 4, 4096), ("llama.feed_forward_length", 4, 14336),
          ("llama.attention.head_count", 4, 32), ("llama.attention.head_count_kv", 4, 8),
          ("general.file_type", 4, 15)]
    tensors = llama_tensors()
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv) + 2))
    for k, ty, v in kv:
        out += gstr(k) + struct.pack("<I", ty) + (gstr(v) if ty == 8 else struct.pack("<I", v))
    out += gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 128256)
    for i in range(128256):
        out += gstr(f"tok{i}")
    out += gstr("tokenizer.ggml.merges") + struct.pack("<IIQ", 9, 8, 280147)
    for i in range(280147):
        out += gstr(f"m{i} x{i}")
    off = 0
    for name, dims, ty in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", GGML[ty], off)
        e, b = BLOCK[ty]
        n = 1
        for d in dims:
            n *= d
        off += ((n // e * b + 31) // 32) * 32
    start = (len(out) + 31) // 32 * 32
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(start + off)
    return start + off, len(out)


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    served = 0

    def log_message(self, *a):
        pass

    def do_GET(self):
        path = self.translate_path(self.path)
        size = os.path.getsize(path)
        rng = self.headers.get("Range", "")
        a, b = 0, size - 1
        if rng.startswith("bytes="):
            s, e = rng[6:].split("-")
            a, b = int(s), min(int(e) if e else size - 1, size - 1)
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(b - a + 1))
        self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(a)
            data = f.read(b - a + 1)
        RangeHandler.served += len(data)
        self.wfile.write(data)


def timed(cmd, runs, env):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, env=env)
        ts.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"{cmd} failed: {r.stderr.decode()[-300:]}")
    rss = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, env=env).stderr.decode().strip().splitlines()
    return statistics.median(ts) * 1000, max(ts) * 1000, (rss[-1] if rss else "?")


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    tmp = tempfile.mkdtemp()
    gguf = os.path.join(tmp, "Llama-3.1-8B-Instruct-Q4_K_M.gguf")
    size, header = write_gguf(gguf)
    print(f"GGUF: {size / 2**30:.2f} GiB file, {header / 2**20:.1f} MiB header")
    os.chdir(tmp)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    cases = [("catalog model", [binary, "inspect", "meta-llama/Llama-3.1-8B-Instruct"], env),
             ("local GGUF", [binary, "inspect", gguf], env),
             ("remote GGUF (loopback)", [binary, "inspect", url], dict(os.environ))]
    print(f"{'inspect on':<24} {'median ms':>10} {'max ms':>8} {'max RSS KiB':>12}")
    for name, cmd, e in cases:
        RangeHandler.served = 0
        med, mx, rss = timed(cmd, runs, e)
        extra = f"  fetched {RangeHandler.served / (runs + 1) / 2**20:.2f} MiB per run" if "remote" in name else ""
        print(f"{name:<24} {med:>10.1f} {mx:>8.1f} {rss:>12}{extra}")


if __name__ == "__main__":
    main()
