//! toolshed mcp against @modelcontextprotocol/server-filesystem over stdio, side by side.
//!
//! A JSON-RPC driver of its own (std and serde_json only, no MCP SDK in the loop): it spawns
//! each server, writes newline-delimited JSON-RPC to its stdin and reads replies from its
//! stdout. It does what `bench/mcp_stdio.py` does, at a fraction of the CPU per call: on a
//! two-core machine the client competes with the server for the cores, and a Python client
//! spent a third as much CPU per call as toolshed itself, so it shaped the figures.
//!
//!   cold start   spawn -> `initialize` response received, median of SPAWNS spawns
//!   sequential   `tools/call` reading a 4 KiB file, one request in flight
//!   pipelined    the same call with INFLIGHT requests in flight (a new id sent per reply)
//!   peak RSS     VmHWM from /proc/PID/status after the pipelined session's calls,
//!                read before stdin is closed
//!   CPU per call the server's user+system time (/proc/PID/stat, every thread, in clock
//!                ticks of 10 ms) over the timed calls of all rounds, divided by the calls;
//!                the driver's own, the same way. Less sensitive to a busy machine than
//!                calls per second.
//!
//! Servers are measured alternately, round by round, so they share the machine's noise.
//! Each throughput round is a fresh process: spawn, initialize, WARMUP untimed calls, then
//! the timed calls. Every reply is parsed into a JSON value and checked (right id, no
//! error, not isError, the file's text in the content), so the client's work per reply is
//! the same kind on both sides.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

const PROTOCOL: &str = "2025-11-25";
const MARKER: &str = "toolshed-bench-line";
/// Linux reports /proc times in USER_HZ, which is 100 on every mainstream ABI.
const TICKS_PER_SECOND: f64 = 100.0;

type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "usage: mcp-driver --toolshed BIN (--filesystem DIST_INDEX_JS [--node NODE] | \
--rust-filesystem BIN | --versus-config TOML | --versus-binary BIN) \
[--gateway [--gateway-sandbox MODE]] [--spawns 15] [--sequential 2000] [--pipelined 10000] \
[--inflight 16] [--rounds 3] [--warmup 100]\n\
--gateway: the peer (server-filesystem or rust-mcp-filesystem) mounted in toolshed against \
the same peer called directly; with --versus-binary, two builds of toolshed in front of it";

struct Options {
    toolshed: PathBuf,
    filesystem: PathBuf,
    /// Instead of server-filesystem, toolshed again with this extra config file
    /// (`TOOLSHED_CONFIG`): the same server side by side with and without, e.g., policy
    /// rules.
    versus_config: Option<PathBuf>,
    /// Instead of server-filesystem, another toolshed binary (an older build, say): the
    /// same calls side by side.
    versus_binary: Option<PathBuf>,
    /// Instead of server-filesystem, the Rust peer `rust-mcp-filesystem` (its binary).
    rust_filesystem: Option<PathBuf>,
    /// With `--rust-filesystem`: that server called directly against the same server
    /// mounted in toolshed (kind `mcp`) and called through it.
    gateway: bool,
    /// The mounted server's `sandbox` (the plugin's default when absent).
    gateway_sandbox: Option<String>,
    node: String,
    spawns: usize,
    sequential: usize,
    pipelined: usize,
    inflight: usize,
    rounds: usize,
    warmup: usize,
}

fn parse_options() -> Result<Options> {
    let mut o = Options {
        toolshed: PathBuf::new(),
        filesystem: PathBuf::new(),
        versus_config: None,
        versus_binary: None,
        rust_filesystem: None,
        gateway: false,
        gateway_sandbox: None,
        node: "node".into(),
        spawns: 15,
        sequential: 2000,
        pipelined: 10000,
        inflight: 16,
        rounds: 3,
        warmup: 100,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        if flag == "--gateway" {
            o.gateway = true;
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--toolshed" => o.toolshed = PathBuf::from(&value),
            "--filesystem" => o.filesystem = PathBuf::from(&value),
            "--versus-config" => o.versus_config = Some(PathBuf::from(&value)),
            "--versus-binary" => o.versus_binary = Some(PathBuf::from(&value)),
            "--rust-filesystem" => o.rust_filesystem = Some(PathBuf::from(&value)),
            "--node" => o.node = value.clone(),
            "--spawns" => o.spawns = number()?,
            "--sequential" => o.sequential = number()?,
            "--pipelined" => o.pipelined = number()?,
            "--inflight" => o.inflight = number()?.max(1),
            "--gateway-sandbox" => o.gateway_sandbox = Some(value.clone()),
            "--rounds" => o.rounds = number()?.max(1),
            "--warmup" => o.warmup = number()?,
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if o.toolshed.as_os_str().is_empty()
        || (o.filesystem.as_os_str().is_empty()
            && o.versus_config.is_none()
            && o.versus_binary.is_none()
            && o.rust_filesystem.is_none())
    {
        return Err(USAGE.into());
    }
    Ok(o)
}

/// How to start one server and which call to make.
#[derive(Clone)]
struct Server {
    name: String,
    argv: Vec<String>,
    /// Variables added to its environment.
    env: Vec<(String, String)>,
    home: PathBuf,
    tool: String,
    arguments: Value,
}

/// One running server process and a JSON-RPC conversation with it.
struct Session<'a> {
    server: &'a Server,
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
    init: Value,
}

impl<'a> Session<'a> {
    fn spawn(server: &'a Server) -> Result<Self> {
        let (program, args) = server
            .argv
            .split_first()
            .ok_or_else(|| format!("{}: empty command", server.name))?;
        let mut child = Command::new(program)
            .args(args)
            .env("TOOLSHED_HOME", &server.home)
            .envs(server.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // MCP_DRIVER_STDERR=1 shows the servers' logs (to see why one failed).
            .stderr(if std::env::var_os("MCP_DRIVER_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .map_err(|e| format!("{}: cannot start {program}: {e}", server.name))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        Ok(Self {
            server,
            child,
            stdin: BufWriter::new(stdin),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            next_id: 0,
            line: String::new(),
            init: Value::Null,
        })
    }

    fn send(&mut self, msg: &Value) -> Result<()> {
        let name = self.server.name.as_str();
        serde_json::to_writer(&mut self.stdin, msg).map_err(|e| format!("{name}: {e}"))?;
        self.stdin
            .write_all(b"\n")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("{name}: cannot write to stdin: {e}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The next response (a message with an id and no method); notifications skipped.
    fn read_reply(&mut self) -> Result<Value> {
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .map_err(|e| format!("{}: cannot read stdout: {e}", self.server.name))?;
            if n == 0 {
                let status = self.child.try_wait().ok().flatten();
                return Err(format!(
                    "{}: stdout closed (exit {status:?})",
                    self.server.name
                ));
            }
            let msg: Value = serde_json::from_str(&self.line).map_err(|e| {
                format!(
                    "{}: a stdout line is not JSON ({e}): {:.200}",
                    self.server.name, self.line
                )
            })?;
            if msg.get("method").is_some() {
                if let Some(id) = msg.get("id") {
                    // A request from the server: the bench offers nothing.
                    let id = id.clone();
                    self.send(&json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "not supported by the bench"}}))?;
                }
                continue;
            }
            return Ok(msg);
        }
    }

    fn initialize(&mut self) -> Result<()> {
        self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "toolshed-bench", "version": "0"},
            }),
        )?;
        let mut reply = self.read_reply()?;
        match reply.get_mut("result") {
            Some(result) => self.init = result.take(),
            None => return Err(format!("{}: initialize failed: {reply}", self.server.name)),
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    fn call(&mut self) -> Result<u64> {
        let params = json!({"name": self.server.tool, "arguments": self.server.arguments});
        self.request("tools/call", params)
    }

    fn check(&self, reply: &Value, want: u64) -> Result<()> {
        let name = self.server.name.as_str();
        if reply.get("id").and_then(Value::as_u64) != Some(want) {
            return Err(format!(
                "{name}: reply id {:?} is not {want}",
                reply.get("id")
            ));
        }
        let result = match reply.get("result") {
            Some(r) if r.get("isError") != Some(&Value::Bool(true)) => r,
            _ => return Err(format!("{name}: call failed: {:.400}", reply.to_string())),
        };
        let has_text = result
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    b.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains(MARKER))
                })
            });
        if !has_text {
            return Err(format!(
                "{name}: file text missing from {:.400}",
                reply.to_string()
            ));
        }
        Ok(())
    }

    fn sequential(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            let want = self.call()?;
            let reply = self.read_reply()?;
            self.check(&reply, want)?;
        }
        Ok(())
    }

    /// `n` calls with `inflight` outstanding; replies may come back in any order.
    fn pipelined(&mut self, n: usize, inflight: usize) -> Result<()> {
        let mut pending = HashSet::with_capacity(inflight);
        let mut sent = 0;
        while sent < inflight.min(n) {
            pending.insert(self.call()?);
            sent += 1;
        }
        for _ in 0..n {
            let reply = self.read_reply()?;
            let id = reply.get("id").and_then(Value::as_u64).unwrap_or(0);
            if !pending.remove(&id) {
                return Err(format!("{}: unexpected reply id {id}", self.server.name));
            }
            self.check(&reply, id)?;
            if sent < n {
                pending.insert(self.call()?);
                sent += 1;
            }
        }
        Ok(())
    }

    fn vm_hwm_kib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(|e| format!("{}: {e}", self.server.name))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{}: no VmHWM", self.server.name))
    }

    fn cpu_ticks(&self) -> Result<u64> {
        cpu_ticks(&format!("/proc/{}/stat", self.child.id()))
    }

    /// The CPU time of the server's live child processes (for the gateway, the mounted
    /// server), and theirs in turn.
    fn children_ticks(&self) -> u64 {
        descendants_ticks(self.child.id())
    }

    fn close(mut self) -> Result<()> {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "{}: did not exit within 10 s of stdin closing",
                        self.server.name
                    ));
                }
                Err(e) => return Err(format!("{}: {e}", self.server.name)),
            }
        }
    }
}

/// utime + stime of a process (every thread, living and exited), in clock ticks.
fn cpu_ticks(stat_path: &str) -> Result<u64> {
    let stat = std::fs::read_to_string(stat_path).map_err(|e| format!("{stat_path}: {e}"))?;
    // The command name may contain spaces; the fields after it are plain.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| format!("{stat_path}: unexpected format"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of stat(5); utime and stime are 14 and 15.
    let field = |i: usize| -> Result<u64> {
        fields
            .get(i - 3)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{stat_path}: no field {i}"))
    };
    Ok(field(14)? + field(15)?)
}

/// The context switches (voluntary and not) of `pid`'s live threads.
fn switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .filter_map(|l| {
                l.strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            })
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

/// The CPU time of `pid`'s live descendants (0 where /proc cannot tell).
fn descendants_ticks(pid: u32) -> u64 {
    let mut total = 0;
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            total += cpu_ticks(&format!("/proc/{child}/stat")).unwrap_or(0);
            total += descendants_ticks(child);
        }
    }
    total
}

fn cold_start_ms(server: &Server) -> Result<(f64, Value)> {
    let t0 = Instant::now();
    let mut s = Session::spawn(server)?;
    s.initialize()?;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    let init = std::mem::take(&mut s.init);
    s.close()?;
    Ok((ms, init))
}

fn session(server: &Server, warmup: usize) -> Result<Session<'_>> {
    let mut s = Session::spawn(server)?;
    s.initialize()?;
    s.sequential(warmup)?;
    Ok(s)
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `12345.6` as `12,346`.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let (sign, digits) = digits
        .strip_prefix('-')
        .map_or(("", digits.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// Per-server figures.
#[derive(Default)]
struct Figures {
    cold_ms: Vec<f64>,
    seq: Vec<f64>,
    pipe: Vec<f64>,
    rss_mb: Vec<f64>,
    seq_ticks: u64,
    pipe_ticks: u64,
    seq_driver_ticks: u64,
    pipe_driver_ticks: u64,
    seq_children_ticks: u64,
    pipe_children_ticks: u64,
    pipe_switches: u64,
}

fn run(o: &Options) -> Result<()> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let work =
        std::env::temp_dir().join(format!("toolshed-mcp-bench-{}-{nanos}", std::process::id()));
    let result = run_in(o, &work);
    if std::env::var_os("MCP_DRIVER_KEEP").is_some() {
        eprintln!("kept {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

fn run_in(o: &Options, work: &Path) -> Result<()> {
    let ws = work.join("ws");
    std::fs::create_dir_all(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
    let line = format!("{MARKER} {}\n", "x".repeat(43)); // 64 bytes
    let text = line.repeat(64);
    assert_eq!(text.len(), 4096);
    let file = ws.join("f.txt");
    std::fs::write(&file, &text).map_err(|e| format!("{}: {e}", file.display()))?;
    let home = work.join("home");
    let ws_arg = ws.to_string_lossy().into_owned();

    let toolshed = Server {
        name: "toolshed".into(),
        argv: vec![
            o.toolshed.to_string_lossy().into_owned(),
            "--workspace".into(),
            ws_arg.clone(),
            "mcp".into(),
        ],
        env: Vec::new(),
        home: home.clone(),
        tool: "workspace_read".into(),
        arguments: json!({"path": "f.txt"}),
    };
    if let Some(binary) = o.versus_binary.as_ref().filter(|_| !o.gateway) {
        let mut argv = toolshed.argv.clone();
        argv[0] = binary.to_string_lossy().into_owned();
        let other = Server {
            name: format!(
                "toolshed ({})",
                binary.file_name().unwrap_or_default().to_string_lossy()
            ),
            argv,
            home: work.join("home2"),
            ..toolshed.clone()
        };
        return compare(o, &toolshed, &other, "(same tool)");
    }
    if let Some(config) = &o.versus_config {
        let config =
            std::fs::canonicalize(config).map_err(|e| format!("{}: {e}", config.display()))?;
        let other = Server {
            name: format!(
                "toolshed + {}",
                config.file_name().unwrap_or_default().to_string_lossy()
            ),
            env: vec![(
                "TOOLSHED_CONFIG".into(),
                config.to_string_lossy().into_owned(),
            )],
            home: work.join("home2"),
            ..toolshed.clone()
        };
        return compare(o, &toolshed, &other, "(same tool)");
    }
    let mut filesystem = match &o.rust_filesystem {
        Some(binary) => Server {
            name: "rust-mcp-filesystem".into(),
            argv: vec![binary.to_string_lossy().into_owned(), ws_arg],
            env: Vec::new(),
            home,
            tool: String::new(),
            arguments: json!({"path": file.to_string_lossy()}),
        },
        None => Server {
            name: "server-filesystem".into(),
            argv: vec![
                o.node.clone(),
                o.filesystem.to_string_lossy().into_owned(),
                ws_arg,
            ],
            env: Vec::new(),
            home,
            tool: String::new(),
            arguments: json!({"path": file.to_string_lossy()}),
        },
    };

    // Pick the peer's text-read tool from its own tool list.
    {
        let mut s = Session::spawn(&filesystem)?;
        s.initialize()?;
        s.request("tools/list", json!({}))?;
        let reply = s.read_reply()?;
        s.close()?;
        let names: Vec<&str> = reply["result"]["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        filesystem.tool = ["read_text_file", "read_file"]
            .into_iter()
            .find(|n| names.contains(n))
            .ok_or_else(|| format!("{} offers no text-read tool: {names:?}", filesystem.name))?
            .to_string();
    }
    let tool = filesystem.tool.clone();
    if o.gateway {
        // The same server mounted in toolshed: its plugin written into toolshed's home.
        let plugin = toolshed.home.join("plugins").join("mcp.fs");
        std::fs::create_dir_all(&plugin).map_err(|e| format!("{}: {e}", plugin.display()))?;
        // Absolute: the server starts in toolshed's workspace.
        let absolute = |arg: &String| {
            std::fs::canonicalize(arg).map_or_else(|_| arg.clone(), |p| p.display().to_string())
        };
        let program = match filesystem.argv[0].contains('/') {
            true => absolute(&filesystem.argv[0]),
            false => on_path(&filesystem.argv[0])?,
        };
        let args: Vec<Value> = filesystem.argv[1..]
            .iter()
            .map(|a| json!(absolute(a)))
            .collect();
        let mut manifest = format!(
            "id = \"mcp.fs\"\nversion = \"1.0.0\"\nname = \"fs\"\nkind = \"mcp\"\n[mcp]\ncommand = {}\nargs = {}\n",
            json!(program),
            json!(args)
        );
        if let Some(mode) = &o.gateway_sandbox {
            manifest.push_str(&format!("sandbox = {}\n", json!(mode)));
        }
        std::fs::write(plugin.join("plugin.toml"), &manifest).map_err(|e| format!("{e}"))?;
        let through = Server {
            name: format!("toolshed → {}", filesystem.name),
            tool: format!("fs__{tool}"),
            arguments: filesystem.arguments.clone(),
            ..toolshed.clone()
        };
        if let Some(binary) = &o.versus_binary {
            // Two builds of toolshed, both in front of the server.
            let home2 = work.join("home2");
            let plugin2 = home2.join("plugins").join("mcp.fs");
            std::fs::create_dir_all(&plugin2).map_err(|e| format!("{}: {e}", plugin2.display()))?;
            std::fs::write(plugin2.join("plugin.toml"), &manifest).map_err(|e| format!("{e}"))?;
            let mut argv = through.argv.clone();
            argv[0] = binary.to_string_lossy().into_owned();
            let other = Server {
                name: format!(
                    "toolshed ({}) → {}",
                    binary.file_name().unwrap_or_default().to_string_lossy(),
                    filesystem.name
                ),
                argv,
                home: home2,
                ..through.clone()
            };
            return compare(o, &through, &other, "(same tool)");
        }
        let direct = Server {
            name: format!("{} direct", filesystem.name),
            ..filesystem
        };
        return compare(o, &through, &direct, &tool);
    }
    compare(o, &toolshed, &filesystem, &tool)
}

/// Where `name` is found on the PATH.
fn on_path(name: &str) -> Result<String> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
        .ok_or_else(|| format!("{name}: not found on the PATH"))
}

/// Drops `program`'s pages from the page cache (after writing back what is dirty), so that
/// both servers compared are read back from disk the same way. A binary the linker has just
/// written sits in the cache in larger pieces, and a process maps more of it: the same
/// bytes measured 1.2-1.6 MiB more peak RSS fresh from the linker than read back
/// (docs/benchmarks.md, "A small read with fewer system calls"). Best effort: a name on the PATH (`node`) is
/// left as it is.
fn evict(program: &Path) {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn posix_fadvise(fd: i32, offset: i64, len: i64, advice: i32) -> i32;
    }
    const POSIX_FADV_DONTNEED: i32 = 4;
    if let Ok(file) = std::fs::File::open(program) {
        let _ = file.sync_data();
        // SAFETY: an open descriptor; the call only advises the kernel.
        unsafe { posix_fadvise(file.as_raw_fd(), 0, 0, POSIX_FADV_DONTNEED) };
    }
}

/// Times `first` and `second` side by side and prints the table.
fn compare(o: &Options, first: &Server, second: &Server, second_tool: &str) -> Result<()> {
    let servers = [first, second];
    let (an, bn) = (first.name.as_str(), second.name.as_str());

    // Every binary read back from disk the same way (see `evict`), then one untimed spawn
    // each: page cache, and toolshed's first-run data dir.
    for s in servers {
        evict(Path::new(&s.argv[0]));
    }
    let mut versions = Vec::new();
    for s in servers {
        let (_, init) = cold_start_ms(s)?;
        versions.push((
            init["protocolVersion"].as_str().unwrap_or("?").to_string(),
            init["serverInfo"]["version"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
        ));
    }

    let mut figures = [Figures::default(), Figures::default()];
    for _ in 0..o.spawns {
        for (s, f) in servers.iter().zip(figures.iter_mut()) {
            f.cold_ms.push(cold_start_ms(s)?.0);
        }
    }
    let me = "/proc/self/stat";
    for _ in 0..o.rounds {
        for (s, f) in servers.iter().zip(figures.iter_mut()) {
            let mut sess = session(s, o.warmup)?;
            let (c0, d0, k0) = (sess.cpu_ticks()?, cpu_ticks(me)?, sess.children_ticks());
            let t0 = Instant::now();
            sess.sequential(o.sequential)?;
            f.seq.push(o.sequential as f64 / t0.elapsed().as_secs_f64());
            f.seq_ticks += sess.cpu_ticks()? - c0;
            f.seq_children_ticks += sess.children_ticks().saturating_sub(k0);
            f.seq_driver_ticks += cpu_ticks(me)? - d0;
            sess.close()?;
        }
        for (s, f) in servers.iter().zip(figures.iter_mut()) {
            let mut sess = session(s, o.warmup)?;
            let (c0, d0, k0) = (sess.cpu_ticks()?, cpu_ticks(me)?, sess.children_ticks());
            let w0 = switches(sess.child.id());
            let t0 = Instant::now();
            sess.pipelined(o.pipelined, o.inflight)?;
            f.pipe_switches += switches(sess.child.id()).saturating_sub(w0);
            f.pipe.push(o.pipelined as f64 / t0.elapsed().as_secs_f64());
            f.pipe_ticks += sess.cpu_ticks()? - c0;
            f.pipe_children_ticks += sess.children_ticks().saturating_sub(k0);
            f.pipe_driver_ticks += cpu_ticks(me)? - d0;
            f.rss_mb.push(sess.vm_hwm_kib()? as f64 / 1024.0);
            sess.close()?;
        }
    }

    let [a, b] = &figures;
    println!(
        "4 KiB file; {} spawns; {} rounds of {} sequential and {} pipelined calls ({} in flight), \
         {} warm-up calls each; {bn} tool `{}`; negotiated protocol / server version: \
         {an} {} / {}, {bn} {} / {}; driver: bench/mcp-driver (Rust)",
        o.spawns,
        o.rounds,
        o.sequential,
        o.pipelined,
        o.inflight,
        o.warmup,
        second_tool,
        versions[0].0,
        versions[0].1,
        versions[1].0,
        versions[1].1
    );
    println!();
    println!("| metric | {an} | {bn} | {an} / {bn} |");
    println!("|---|---|---|---|");
    let row = |label: &str, x: f64, y: f64, fmt: &dyn Fn(f64) -> String| {
        println!("| {label} | {} | {} | {:.2}× |", fmt(x), fmt(y), x / y);
    };
    let one = |x: f64| format!("{x:.1}");
    let int = |x: f64| thousands(x);
    row(
        "cold start to `initialize` reply (ms, median)",
        median(&a.cold_ms),
        median(&b.cold_ms),
        &one,
    );
    row(
        "sequential `tools/call` (calls/s, median)",
        median(&a.seq),
        median(&b.seq),
        &int,
    );
    row(
        &format!("{} in flight `tools/call` (calls/s, median)", o.inflight),
        median(&a.pipe),
        median(&b.pipe),
        &int,
    );
    row(
        &format!(
            "peak RSS after {} calls (MB, VmHWM, median)",
            thousands((o.warmup + o.pipelined) as f64)
        ),
        median(&a.rss_mb),
        median(&b.rss_mb),
        &one,
    );
    let per_call = |ticks: u64, calls: usize| {
        ticks as f64 / TICKS_PER_SECOND / (calls * o.rounds) as f64 * 1e6
    };
    row(
        "server CPU per call, sequential (µs, user+system, all rounds)",
        per_call(a.seq_ticks, o.sequential),
        per_call(b.seq_ticks, o.sequential),
        &int,
    );
    row(
        &format!(
            "server CPU per call, {} in flight (µs, user+system, all rounds)",
            o.inflight
        ),
        per_call(a.pipe_ticks, o.pipelined),
        per_call(b.pipe_ticks, o.pipelined),
        &int,
    );
    println!();
    println!(
        "driver CPU per call (µs): sequential {} against {an}, {} against {bn}; \
         {} in flight {} and {}",
        int(per_call(a.seq_driver_ticks, o.sequential)),
        int(per_call(b.seq_driver_ticks, o.sequential)),
        o.inflight,
        int(per_call(a.pipe_driver_ticks, o.pipelined)),
        int(per_call(b.pipe_driver_ticks, o.pipelined)),
    );
    println!(
        "context switches per call, {} in flight (the server's threads alive at the end): \
         {an} {:.2}, {bn} {:.2}",
        o.inflight,
        a.pipe_switches as f64 / (o.pipelined * o.rounds) as f64,
        b.pipe_switches as f64 / (o.pipelined * o.rounds) as f64,
    );
    for (name, f) in [(an, a), (bn, b)] {
        if f.seq_children_ticks + f.pipe_children_ticks > 0 {
            println!(
                "CPU per call of {name}'s child processes (µs; for the gateway, the mounted \
                 server): sequential {}, {} in flight {}",
                int(per_call(f.seq_children_ticks, o.sequential)),
                o.inflight,
                int(per_call(f.pipe_children_ticks, o.pipelined)),
            );
        }
    }
    // Each round runs both servers one after the other: a ratio taken within a round
    // sees the same machine, where medians taken apart may not.
    let paired = |x: &[f64], y: &[f64]| {
        let ratios: Vec<f64> = x.iter().zip(y).map(|(x, y)| x / y).collect();
        let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        format!("median {:.2}× ({})", median(&ratios), shown.join(" / "))
    };
    println!(
        "{an} / {bn} within each round: sequential {}; {} in flight {}",
        paired(&a.seq, &b.seq),
        o.inflight,
        paired(&a.pipe, &b.pipe),
    );
    let list = |v: &[f64], fmt: &dyn Fn(f64) -> String| {
        v.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(" / ")
    };
    println!(
        "per round, {an} | {bn}: sequential {} | {}; in flight {} | {}; RSS {} | {}",
        list(&a.seq, &int),
        list(&b.seq, &int),
        list(&a.pipe, &int),
        list(&b.pipe, &int),
        list(&a.rss_mb, &one),
        list(&b.rss_mb, &one),
    );
    Ok(())
}

fn main() -> ExitCode {
    let result = parse_options().and_then(|o| run(&o));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-driver: {e}");
            ExitCode::FAILURE
        }
    }
}
