//! Command-line syntax.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod plugins;
pub(crate) use plugins::{InstallArgs, PluginsCommand};

/// toolshed: a fast, safe tool and plugin host for AI agents.
#[derive(Debug, Parser)]
#[command(name = "toolshed", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line of this process. `toolshed [GLOBAL FLAGS] mcp [FLAGS]`, which an
    /// MCP client runs at every start, is read by a parser that knows only those flags: the
    /// whole command tree (every subcommand and its arguments) takes clap about 0.7 million
    /// instructions to build, read and drop, on the path to the `initialize` reply. Any
    /// other command line, or one that parser refuses (a subcommand of `mcp`, `--help`, a
    /// mistake), goes to the full parser, which gives the usual help and errors.
    pub(crate) fn from_args() -> Self {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Self::serving_mcp(&args).unwrap_or_else(|| Self::parse_from(args))
    }

    /// `args` as `toolshed [GLOBAL FLAGS] mcp [FLAGS]`, when that is what they are.
    fn serving_mcp(args: &[std::ffi::OsString]) -> Option<Self> {
        // The global flags that take a value; before `mcp`, only these (or `--NAME=VALUE`).
        const GLOBAL: &[&str] = &["--workspace", "--data-dir", "--config", "--token"];
        let mut at = 1;
        loop {
            let word = args.get(at)?.to_str()?;
            if word == "mcp" {
                break;
            }
            if word
                .split_once('=')
                .is_some_and(|(name, _)| GLOBAL.contains(&name))
            {
                at += 1;
            } else if GLOBAL.contains(&word) {
                at += 2;
            } else {
                return None;
            }
        }
        let words = std::iter::once(&args[at])
            .chain(&args[1..at])
            .chain(&args[at + 1..]);
        let served = ServeMcp::try_parse_from(words).ok()?;
        Some(Self {
            global: served.global,
            command: Command::Mcp(McpCommandArgs {
                command: None,
                serve: served.serve,
            }),
        })
    }
}

/// `toolshed mcp` with its flags and the global ones, and nothing else (see
/// [`Cli::from_args`]).
#[derive(Debug, Parser)]
#[command(name = "mcp")]
struct ServeMcp {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(flatten)]
    serve: McpArgs,
}

/// Flags every command takes.
#[derive(Debug, Clone, Args)]
pub(crate) struct GlobalArgs {
    /// The workspace root: tools work inside it [default: the current directory]. Given
    /// again, further roots: tools reach them as `@NAME/path` (NAME: the directory's name)
    #[arg(
        long = "workspace",
        global = true,
        env = "TOOLSHED_WORKSPACE",
        value_name = "DIR"
    )]
    pub workspaces: Vec<PathBuf>,
    /// Where toolshed keeps its state [default: $TOOLSHED_HOME, else ~/.local/share/toolshed]
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// An extra config file, read after the workspace and user config files
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// An agent token (`toolshed token create`): `call` and `mcp` then run as its owner and
    /// within its scopes
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        env = "TOOLSHED_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

impl GlobalArgs {
    /// The workspace given (the first `--workspace`), if any.
    pub(crate) fn workspace(&self) -> Option<&PathBuf> {
        self.workspaces.first()
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List and inspect tools
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Call a tool through the full pipeline and print its result
    Call(CallArgs),
    /// List, install, configure, enable, disable, reload and uninstall plugins
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
    /// Serve MCP over stdio (add toolshed to Claude Code, Codex, Cursor or Goose this way),
    /// or mount other MCP servers: `toolshed mcp add|list|remove`
    Mcp(McpCommandArgs),
    /// Serve MCP over streamable HTTP at http://127.0.0.1:7070/mcp, behind a bearer token
    Serve(ServeArgs),
    /// Print a one-time login link to the dashboard of a running `toolshed serve`
    Dashboard {
        /// The server's address, as `toolshed serve` printed it (default:
        /// http://127.0.0.1:7070)
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Print the admin bearer token (generated on first use), or manage agent tokens
    Token {
        #[command(subcommand)]
        command: Option<TokenCommand>,
    },
    /// Show what the command sandbox enforces on this machine
    Sandbox {
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// List the calls waiting for a person's approval, and approve or deny them
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Export memories as Markdown files a person can read and edit, or import them back
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Ask the policy rules what they decide for a call, without running it
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Check configuration, data dir, plugins, env contracts and requirements
    Doctor {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Read the audit log: every call, newest first, with its owner, door and outcome
    Audit(AuditArgs),
    /// Write a starter config, or show the settings in force and which file set each one
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Move this toolshed's state from its SQLite file to a Postgres database
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Serve a workspace of this machine to a toolshed elsewhere, over stdin and stdout (the
    /// far side of an ssh://, docker:// or podman:// workspace; docs/backends.md)
    Worker {
        /// The workspace directory on this machine
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The sandbox mode commands run in: read-only, workspace-write or full-access
        /// [default: [sandbox] mode]
        #[arg(long, value_name = "MODE")]
        sandbox: Option<String>,
    },
    /// Lay out the workspace as Fenix does (`toolshed workspace init`)
    Workspace {
        #[command(subcommand)]
        command: crate::commands::workspace::WorkspaceCommand,
    },
    /// Trust an SSH server's host key for ssh:// workspaces
    Ssh {
        #[command(subcommand)]
        command: SshCommand,
    },
    /// Print a shell completion script: `toolshed completions bash > ~/.local/share/bash-completion/completions/toolshed`
    Completions {
        /// The shell
        shell: Shell,
    },
}

/// `toolshed ssh …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SshCommand {
    /// Fetch a server's host keys, show their fingerprints and trust them
    /// (`toolshed ssh trust ssh://user@host:2222/srv/app`, or `host:2222`)
    Trust {
        /// The workspace URL or `host[:port]`
        target: String,
        /// Replace the keys trusted before for this host (after its key really changed)
        #[arg(long)]
        replace: bool,
    },
}

/// The shells `toolshed completions` writes scripts for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Only calls of tools matching this glob (e.g. `workspace_*`)
    #[arg(long, value_name = "GLOB")]
    pub tool: Option<String>,
    /// Only calls of owners matching this glob (e.g. `alice/*`)
    #[arg(long, value_name = "GLOB")]
    pub owner: Option<String>,
    /// Only calls since then: `30m`, `2h`, `7d`, or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only calls with this outcome: ok, tool_error, error
    #[arg(long, value_name = "OUTCOME")]
    pub outcome: Option<String>,
    /// Only the calls made on behalf of this call id (a run_code snippet's tool calls)
    #[arg(long, value_name = "CALL_ID")]
    pub parent: Option<String>,
    /// How many rows, 1 to 1000
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Older rows: the cursor the previous page printed
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    /// Print exact JSON (`{"audit": [...], "next_cursor": ...}`)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Write a commented starter config (every setting, at its default, commented out)
    Init {
        /// Where [default: your user config, ~/.config/toolshed/config.toml]
        #[arg(long, value_name = "FILE")]
        path: Option<PathBuf>,
        /// Replace the file if it exists
        #[arg(long)]
        force: bool,
    },
    /// Print every setting in force and the file (or variable) that set it
    Show {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// The calls waiting for an answer (all recent requests with --all)
    List {
        /// Also the answered and expired ones
        #[arg(long)]
        all: bool,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Let the waiting call run
    Approve {
        /// The request's id (`ap-…`)
        id: String,
        /// Also approve the same tool with the same arguments for this owner from now on
        #[arg(long)]
        remember: bool,
    },
    /// Refuse the waiting call
    Deny {
        /// The request's id (`ap-…`)
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Write each present memory as DIR/[NAMESPACE/]ID.md, front matter first
    Export {
        /// The directory (created if needed; files of the same ids are replaced)
        dir: PathBuf,
        /// Whose memories: an agent token's owner (default: yours, `local`)
        #[arg(long, value_name = "NAME", default_value = "local")]
        owner: String,
    },
    /// Read the .md files under DIR: a file with a known `id` updates that memory, any
    /// other is stored as a new memory and gets its id written into its front matter
    Import {
        /// The directory
        dir: PathBuf,
        /// Whose memories: an agent token's owner (default: yours, `local`)
        #[arg(long, value_name = "NAME", default_value = "local")]
        owner: String,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a token for one agent: its calls run as OWNER (or a sub-owner OWNER/…)
    Create {
        /// The owner the token acts as
        #[arg(long, value_name = "NAME")]
        owner: String,
        /// What it may do (repeat, or comma-separate): tools:call, tools:list,
        /// plugins:admin, approvals:answer, audit:read, metrics:read; narrowed by
        /// tool:RULE, sandbox:MODE, workspace:PLACE [default: tools:call,tools:list]
        #[arg(long = "scope", value_name = "SCOPE", value_delimiter = ',')]
        scopes: Vec<String>,
        /// Stop working after this long: e.g. 90m, 12h, 30d
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
        /// Run its calls in a narrower sandbox mode than the host's: read-only (no tool
        /// writes files, commands run read-only) or workspace-write
        #[arg(long, value_name = "MODE")]
        sandbox: Option<String>,
        /// Pin it to one workspace (a directory, or an ssh://, docker:// or podman:// URL):
        /// its calls run there, and every door and server serving another refuses it
        #[arg(long, value_name = "WORKSPACE")]
        pin: Option<String>,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// List agent tokens: id, owner, scopes, created, expires, last used (never the secret)
    List {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: refused from its next request on
    Revoke {
        /// The token's id (or the whole token)
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Copy every row of the data dir's toolshed.db (plugin state and config, grants,
    /// tokens, approvals, jobs, events, memories, audit, todo lists, schedules) into an
    /// empty Postgres database, in one transaction, and check the counts on both sides
    Migrate {
        /// The target: postgres://USER:PASSWORD@HOST:PORT/DATABASE (an empty database)
        #[arg(long, value_name = "URL")]
        to: String,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Print the decision (allow, ask, deny) for a call and the rule that made it
    Test {
        /// The tool name
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from standard input [default: {}]
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Who is calling
        #[arg(long, value_name = "NAME", default_value = "cli")]
        owner: String,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Run `true` in the configured sandbox and print the layers in force; exits 1 when
    /// the configured mode cannot be enforced here
    Check {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the tools this caller can use
    List {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
        /// Only tools of this group (e.g. `util`)
        #[arg(long, value_name = "G")]
        group: Option<String>,
        /// Only tools of this plane: `execution` (Fenix's `execution_runtime`: the
        /// workspace, processes, the world) or `program` (toolshed itself)
        #[arg(long, value_name = "PLANE")]
        plane: Option<String>,
        /// The tools a client using this profile sees (built in: all, coding, readonly,
        /// web; or a `[profiles.NAME]` of the configuration)
        #[arg(long, value_name = "P")]
        profile: Option<String>,
        /// Also the bytes each tool takes in `tools/list`, and the total an MCP client's
        /// model pays for on every turn
        #[arg(long)]
        size: bool,
    },
    /// List the operator groups of the tools this caller can use: label, description and
    /// tools
    Groups {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one tool: description, annotations and input schema
    Show {
        /// The tool name
        name: String,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool name
    pub name: String,
    /// The arguments as a JSON object, or `-` to read them from standard input [default: {}]
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Print the exact result as JSON
    #[arg(long)]
    pub json: bool,
    /// Stop the call after this many milliseconds
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Who is calling: reads recorded for one owner allow that owner's later edits, across
    /// runs [default: cli; with --token, the token's owner, which this may only narrow to
    /// a sub-owner]
    #[arg(long, value_name = "NAME")]
    pub owner: Option<String>,
    /// Use a named profile to narrow the visible tools (shipped: all, coding, plan,
    /// readonly, web; or a `[profiles.NAME]` of the config)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// `standard`: every tool but the `[mcp] on_demand` ones (utilities, downloads,
    /// background processes), plus tool_search and tool_call, through which those are
    /// found and run; `full`: every tool; `discover`: only the `[mcp] core` tools plus
    /// tool_search and tool_call [default: the profile's `catalog`; else full with
    /// --tools or a profile other than all; else standard]
    #[arg(long, value_name = "MODE", value_parser = ["standard", "full", "discover"])]
    pub catalog: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Only these tools, as comma-separated name globs (e.g. `workspace_*,calculator`):
    /// the client sees no others and may call no others
    #[arg(long, value_name = "GLOBS")]
    pub tools: Option<String>,
    /// Use a named profile to narrow the visible tools (shipped: all, coding, plan,
    /// readonly, web; or a `[profiles.NAME]` of the config)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// `standard`: every tool but the `[mcp] on_demand` ones (utilities, downloads,
    /// background processes), plus tool_search and tool_call, through which those are
    /// found and run; `full`: every tool; `discover`: only the `[mcp] core` tools plus
    /// tool_search and tool_call [default: the profile's `catalog`; else full with
    /// --tools or a profile other than all; else standard]
    #[arg(long, value_name = "MODE", value_parser = ["standard", "full", "discover"])]
    pub catalog: Option<String>,
}

/// `toolshed mcp`: serve MCP on stdio, or manage the MCP servers toolshed mounts.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct McpCommandArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    #[command(flatten)]
    pub serve: McpArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Mount an MCP server that runs over stdio: `toolshed mcp add memory -- npx -y @modelcontextprotocol/server-memory`
    Add(McpAddArgs),
    /// The mounted MCP servers, with their state and tools
    List {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Unmount an MCP server (its plugin, config and secrets are removed)
    Remove {
        /// The server's name (or its plugin id, `mcp.NAME`)
        name: String,
    },
    /// Show a server's pinned tools, or accept tools whose definition changed since they
    /// were pinned (withheld until then)
    Pin {
        /// The server's name (or its plugin id, `mcp.NAME`)
        name: String,
        /// Accept this tool's current definition (its name on the server, or as mounted);
        /// repeat for more
        #[arg(long, value_name = "TOOL")]
        accept: Vec<String>,
        /// Accept every tool's current definition
        #[arg(long, conflicts_with = "accept")]
        all: bool,
    },
    /// Mount every server of an `mcpServers` JSON config (Claude Desktop's
    /// claude_desktop_config.json, Claude Code's .mcp.json, Cursor's mcp.json); secret
    /// variables go to toolshed's secret store
    Import {
        /// The config file
        file: PathBuf,
        /// Replace servers of the same names
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct McpAddArgs {
    /// The server's name: its tools are mounted as NAME__TOOL, its plugin is `mcp.NAME`
    pub name: String,
    /// A variable for the server, KEY=VALUE (repeat). Values of names that look secret
    /// (TOKEN, KEY, SECRET, PASSWORD) go to toolshed's secret store, not the plugin file
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A host the server may reach, HOST or HOST:PORT (repeat; `*`: any public host, under
    /// the web rules). Without one, a sandboxed server has no network
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Start it as soon as `toolshed mcp` or `toolshed serve` opens, not at its first call
    #[arg(long)]
    pub eager: bool,
    /// The sandbox mode it runs in: read-only, workspace-write or full-access [default: the
    /// configured one]
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// Replace a server of the same name
    #[arg(long)]
    pub force: bool,
    /// Mount its tools and prompts as PREFIX__TOOL instead of NAME__TOOL; `--prefix ''`
    /// keeps their own names (refused if one is already taken)
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Let it ask for model completions during a call (sampling/createMessage), answered
    /// by the calling client's sampling or toolshed's [llm] endpoint: declares and grants
    /// `llm`. Without it, toolshed offers the server questions for the person only
    #[arg(long)]
    pub sampling: bool,
    /// The URL of a server reached over streamable HTTP, instead of a command
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// A header sent to the --url server, NAME=VALUE (repeat). Values of credential headers
    /// (Authorization, Cookie, names with TOKEN, KEY, SECRET) go to the secret store
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME=VALUE",
        requires = "url"
    )]
    pub headers: Vec<String>,
    /// The command that runs the server, and its arguments (after `--`)
    #[arg(last = true, required_unless_present = "url", value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The TCP port to listen on (default: `server.port` in the config, else 7070); 0 picks
    /// a free one (the bound address is printed on stderr as `listening on http://ADDR/mcp`)
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// The address to listen on (default: `server.bind` in the config, else 127.0.0.1).
    /// Anything but loopback needs --allow-remote
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Allow a non-loopback --bind address: other machines can then reach toolshed, and
    /// the token is all that guards it
    #[arg(long)]
    pub allow_remote: bool,
    /// Print a one-time login link to the dashboard (at `/`) once listening
    #[arg(long)]
    pub open: bool,
    /// Also serve the gRPC door (docs/grpc.md) on this TCP port of the same address, with
    /// the same token (default: `server.grpc_port` in the config, else none); 0 picks a
    /// free one (printed on stderr as `gRPC on ADDR`)
    #[arg(long, value_name = "N")]
    pub grpc_port: Option<u16>,
    #[command(flatten)]
    pub selection: McpArgs,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<std::ffi::OsString> {
        line.split_whitespace().map(Into::into).collect()
    }

    /// The quick reading of `toolshed mcp …` gives what the full parser gives, and leaves
    /// every other command line to it.
    #[test]
    fn serving_mcp_reads_as_the_full_parser_does() {
        for line in [
            "toolshed mcp",
            "toolshed mcp --tools workspace_*,calculator --profile coding",
            "toolshed mcp --catalog discover --workspace /tmp --data-dir /tmp/d",
            "toolshed mcp --token=tok --config /tmp/c.toml --tools=x",
            "toolshed --workspace /tmp mcp",
            "toolshed --workspace=/tmp --data-dir /tmp/d mcp --profile web",
            "toolshed --config mcp mcp",
        ] {
            let quick = Cli::serving_mcp(&words(line)).expect(line);
            let full = Cli::try_parse_from(words(line)).expect(line);
            assert_eq!(format!("{quick:?}"), format!("{full:?}"), "{line}");
        }
        for line in [
            "toolshed",
            "toolshed tools list",
            "toolshed --workspace /tmp tools list",
            "toolshed --workspace",
            "toolshed --verbose mcp",
            "toolshed --tools=x mcp",
            "toolshed --workspace /tmp mcp list",
            "toolshed mcp list",
            "toolshed mcp add memory -- npx server",
            "toolshed mcp --help",
            "toolshed mcp --version",
            "toolshed mcp --catalog sometimes",
            "toolshed mcp --nope",
        ] {
            assert!(Cli::serving_mcp(&words(line)).is_none(), "{line}");
        }
    }
}
