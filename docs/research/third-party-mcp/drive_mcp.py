# ruff: noqa
# Research driver (docs/research/third-party-mcp/README.md), kept as measured; not part of the package.
#!/usr/bin/env python3
"""Drive a stdio MCP server by hand: initialize, notifications/initialized, tools/list, tools/call.

Run with /work/main/.venv/bin/python (for pairlab's offline cl100k counter).

    drive_mcp.py --spec spec.json --out result.json [--netns] [--strace] [--repeat N]

spec.json:
  {"name": "...", "command": "/abs/bin/server", "args": [...], "env": {...},
   "cwd": "/abs/workspace",            # the episode workspace (a git repo)
   "calls": [{"name": "tool", "arguments": {...}}, ...],
   "call_timeout_s": 120}

HOME, TMPDIR and XDG_* are pointed at a fresh directory per run (<out>.home/run<i>) so every
file the server writes outside the workspace shows up there; the workspace is snapshotted
before/after so files written into it are listed too.
--netns runs the server under `unshare -rn` (no network interface but lo): proves offline.
--strace logs connect()/sendto() syscalls of the whole process tree (network attempts).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

PROTOCOL = "2025-06-18"


def snapshot(root: Path) -> dict[str, float]:
    out = {}
    if not root.exists():
        return out
    for p in root.rglob("*"):
        if ".git" in p.parts:
            continue
        try:
            if p.is_file():
                out[str(p.relative_to(root))] = p.stat().st_mtime
        except OSError:
            pass
    return out


class Conn:
    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)
        self.buf = b""
        self.next_id = 1
        self.notes: list[dict] = []

    def send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None, timeout: float) -> tuple[dict, float]:
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        t0 = time.perf_counter()
        self.send(msg)
        deadline = t0 + timeout
        while True:
            line = self._readline(deadline)
            if line is None:
                raise TimeoutError(f"{method}: no response within {timeout}s (rc={self.proc.poll()})")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                self.notes.append({"non_json_stdout": line[:500]})
                continue
            if obj.get("id") == rid and ("result" in obj or "error" in obj):
                return obj, (time.perf_counter() - t0) * 1000
            if "method" in obj and "id" in obj:  # server->client request (roots/list, ping...)
                if obj["method"] == "roots/list":
                    self.send({"jsonrpc": "2.0", "id": obj["id"], "result": {"roots": []}})
                else:
                    self.send({"jsonrpc": "2.0", "id": obj["id"], "result": {}})
                self.notes.append({"server_request": obj["method"]})
            else:
                self.notes.append({"notification": obj.get("method"), "params": obj.get("params")})

    def _readline(self, deadline: float) -> str | None:
        while b"\n" not in self.buf:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            if not self.sel.select(left):
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")


def count_tokens(texts: list[str]) -> list[int]:
    sys.path.insert(0, "/work/main")
    from pairlab.core.accounting.tokenizer import load_token_counter

    c = load_token_counter()
    return [c.count(t) for t in texts]


def run_once(spec: dict, run_dir: Path, netns: bool, strace: bool, do_calls: bool) -> dict:
    home = run_dir / "home"
    tmp = run_dir / "tmp"
    for d in (home, tmp):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    for rel, content in spec.get("seed_home_files", {}).items():
        f = home / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(content)
    env = {
        "PATH": os.path.dirname(spec["command"]) + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "LANG": "C.UTF-8",
    }
    seeded = set(spec.get("seed_home_files", {}))
    env.update({k: v.replace("$HOME", str(home)).replace("$WORKSPACE", spec["cwd"]) for k, v in spec.get("env", {}).items()})
    argv = [spec["command"], *[a.replace("$WORKSPACE", spec["cwd"]).replace("$HOME", str(home)) for a in spec.get("args", [])]]
    if strace:
        argv = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(run_dir / "strace.log"), *argv]
    if netns:
        argv = ["unshare", "-rn", *argv]
    ws = Path(spec["cwd"])
    before = snapshot(ws)
    stderr_f = open(run_dir / "stderr.log", "wb")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t_spawn = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=spec["cwd"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_f)
    conn = Conn(proc)
    res: dict = {"argv": argv}
    try:
        init, _ = conn.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {"roots": {"listChanged": False}},
             "clientInfo": {"name": "pairlab-mcp-research", "version": "0.1"}},
            timeout=spec.get("startup_timeout_s", 60),
        )
        res["startup_ms"] = round((time.perf_counter() - t_spawn) * 1000, 1)
        res["initialize"] = init
        conn.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tl, tl_ms = conn.request("tools/list", {}, timeout=60)
        tools = tl.get("result", {}).get("tools", [])
        cursor = tl.get("result", {}).get("nextCursor")
        while cursor:
            more, _ = conn.request("tools/list", {"cursor": cursor}, timeout=60)
            tools += more.get("result", {}).get("tools", [])
            cursor = more.get("result", {}).get("nextCursor")
        res["tools_list_ms"] = round(tl_ms, 1)
        res["ready_ms"] = round((time.perf_counter() - t_spawn) * 1000, 1)
        res["tools"] = tools
        calls = []
        if do_calls:
            for c in spec.get("calls", []):
                try:
                    r, ms = conn.request("tools/call", {"name": c["name"], "arguments": c.get("arguments", {})},
                                         timeout=spec.get("call_timeout_s", 120))
                except TimeoutError as e:
                    calls.append({"call": c, "error": str(e)})
                    continue
                calls.append({"call": c, "ms": round(ms, 1), "response": r})
        res["calls"] = calls
    except Exception as e:  # noqa: BLE001
        res["error"] = repr(e)
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stderr_f.close()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res["cpu_ms_total"] = round(((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)) * 1000, 1)
    res["loadavg"] = os.getloadavg()
    res["exit_code"] = proc.returncode
    res["notes"] = conn.notes
    after = snapshot(ws)
    res["workspace_files_written"] = sorted(k for k, v in after.items() if before.get(k) != v)
    res["home_files_written"] = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                                       if p.is_file() and p.parts[len(run_dir.parts)] in ("home", "tmp"))
    res["stderr_tail"] = (run_dir / "stderr.log").read_text(errors="replace")[-3000:]
    if strace:
        log = (run_dir / "strace.log").read_text(errors="replace").splitlines()
        res["net_syscalls"] = [l for l in log if "AF_INET" in l or "AF_INET6" in l][:50]
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--netns", action="store_true")
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="extra handshake-only runs for startup timing")
    a = ap.parse_args()
    spec = json.loads(Path(a.spec).read_text())
    out = Path(a.out).resolve()
    base = out.with_suffix(".runs")
    base.mkdir(parents=True, exist_ok=True)
    main_run = run_once(spec, base / "run0", a.netns, a.strace, do_calls=True)
    startups = [main_run.get("startup_ms")]
    cpus = []
    for i in range(a.repeat):
        r = run_once(spec, base / f"run{i + 1}", a.netns, False, do_calls=False)
        startups.append(r.get("startup_ms"))
        cpus.append(r.get("cpu_ms_total"))
    tools = main_run.get("tools", [])
    full = json.dumps(tools, separators=(",", ":"), ensure_ascii=False)
    slim = [{"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("inputSchema", {})} for t in tools]
    slim_s = json.dumps(slim, separators=(",", ":"), ensure_ascii=False)
    per_tool = count_tokens([json.dumps(s, separators=(",", ":"), ensure_ascii=False) for s in slim])
    full_tok, slim_tok = count_tokens([full, slim_s])
    payload_tok = count_tokens([json.dumps(c.get("response", {}).get("result", {}).get("content", c.get("error")), ensure_ascii=False)
                                for c in main_run.get("calls", [])]) if main_run.get("calls") else []
    for c, n in zip(main_run.get("calls", []), payload_tok):
        c["content_tokens_cl100k"] = n
    summary = {
        "name": spec["name"],
        "netns_offline": a.netns,
        "startup_ms_runs": startups,
        "startup_ms_warm_median": sorted(x for x in startups[1:] if x is not None)[len(startups[1:]) // 2] if len(startups) > 1 and all(startups[1:]) else None,
        "handshake_only_cpu_ms_runs": cpus,
        "loadavg_at_end": os.getloadavg(),
        "tool_count": len(tools),
        "tool_names": [t["name"] for t in tools],
        "definition_tokens_cl100k_full_mcp_json": full_tok,
        "definition_tokens_cl100k_name_desc_schema": slim_tok,
        "per_tool_tokens": dict(zip([t["name"] for t in tools], per_tool)),
        "server_info": main_run.get("initialize", {}).get("result", {}).get("serverInfo"),
        "instructions_tokens": count_tokens([main_run.get("initialize", {}).get("result", {}).get("instructions") or ""])[0],
    }
    out.write_text(json.dumps({"summary": summary, "run": main_run}, indent=2, ensure_ascii=False))
    print(json.dumps(summary, indent=2))
    if main_run.get("error"):
        print("ERROR:", main_run["error"], file=sys.stderr)
        print(main_run.get("stderr_tail", ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
