//! The `toolshed` binary.
//!
//! Exit codes: 0 success, 1 a tool or runtime error, 2 bad usage (flags, `--args`, config).

use std::process::ExitCode;

#[macro_use]
mod render;
mod builtins;
mod cli;
mod commands;
mod context;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod math;
#[cfg(feature = "otel")]
mod telemetry;

use cli::{Cli, Command, PluginsCommand, PolicyCommand, SandboxCommand, ToolsCommand};

/// A failure that decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad usage: exit 2.
    Usage(String),
    /// A tool or runtime error: exit 1 (already printed when the message is empty).
    Runtime(String),
}

/// An owner or a scope given on the command line that is refused is bad usage.
impl From<toolshed_host::identity::IdentityError> for Failure {
    fn from(refused: toolshed_host::identity::IdentityError) -> Self {
        Self::Usage(refused.to_string())
    }
}

impl Failure {
    fn exit(self) -> ExitCode {
        match self {
            Self::Usage(message) => {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
            Self::Runtime(message) => {
                if !message.is_empty() {
                    eprintln!("error: {message}");
                }
                ExitCode::from(1)
            }
        }
    }
}

/// The most threads a server runs blocking work on (file reads, searches). tokio's default,
/// 512, lets a burst of concurrent calls start a thread each, and every thread keeps its
/// own malloc arena: 16 calls in flight started 20-30 threads, about 1 MB of the server's
/// memory, for no gain on a machine with fewer cores than that. Work beyond the limit
/// waits its turn.
const MAX_BLOCKING_THREADS: usize = 8;

fn main() -> ExitCode {
    // `toolshed sandbox-exec …`: the command sandbox's helper, before any thread starts.
    toolshed_ops::sandbox::run_if_asked();
    // Room for connections, pipes and pidfds: the soft descriptor limit goes up to the hard
    // one (commands get the limit toolshed started with).
    toolshed_ops::raise_descriptor_limit();
    let cli = Cli::from_args();
    // Servers handle calls in parallel on every core; one-shot commands start faster on
    // one thread.
    let serves = matches!(
        cli.command,
        Command::Mcp(cli::McpCommandArgs { command: None, .. }) | Command::Serve(_)
    );
    let mut builder = if serves {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.max_blocking_threads(MAX_BLOCKING_THREADS);
        builder
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return Failure::Runtime(format!("cannot start the async runtime: {e}")).exit(),
    };
    let outcome = runtime.block_on(run(cli));
    // A thread blocked reading stdin (the stdio transport) never ends by itself when the
    // server stops for another reason (a signal, the parent gone): do not wait for it long.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    // The last spans and metrics, those of the tasks just stopped included.
    #[cfg(feature = "otel")]
    telemetry::shutdown();
    // The cgroups this process made for its commands go with it.
    toolshed_ops::release_cgroups();
    match outcome {
        Ok(()) if render::stdout_failed() => ExitCode::from(1),
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}

/// Writes the completion script for `shell` to standard output.
fn completions(shell: cli::Shell) {
    use clap::CommandFactory as _;
    let shell = match shell {
        cli::Shell::Bash => clap_complete::Shell::Bash,
        cli::Shell::Zsh => clap_complete::Shell::Zsh,
        cli::Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolshed", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
}

async fn run(cli: Cli) -> Result<(), Failure> {
    if let Command::Token { command: None } = cli.command {
        return commands::serve::print_token(&cli.global).await;
    }
    if let Command::Dashboard { url } = &cli.command {
        return commands::serve::print_login_link(&cli.global, url.clone()).await;
    }
    // Commands that read files of their own and need no workspace or host.
    match cli.command {
        Command::Completions { shell } => {
            completions(shell);
            return Ok(());
        }
        Command::Config { command } => return commands::config::run(&cli.global, command),
        Command::Worker { root, sandbox } => {
            return commands::remote::worker(&cli.global, &root, sandbox.as_deref()).await;
        }
        Command::Ssh {
            command: cli::SshCommand::Trust { target, replace },
        } => return commands::remote::trust(&cli.global, &target, replace),
        Command::Audit(args) => return commands::audit::run(&cli.global, args).await,
        Command::Workspace { command } => {
            let workspace = context::chosen_workspace(&cli.global)?;
            return commands::workspace::run(&workspace, command);
        }
        Command::Store {
            command: cli::StoreCommand::Migrate { to, json },
        } => return commands::store::migrate(&cli.global, &to, json).await,
        Command::Plugins {
            command: PluginsCommand::Inspect { dir, json },
        } => return commands::plugins::inspect(&dir, json),
        _ => {}
    }
    // The stdio door answers `initialize` while the host opens behind it.
    let cli = match cli.command {
        Command::Mcp(cli::McpCommandArgs {
            command: None,
            serve,
        }) => return commands::mcp::run(cli.global, serve).await,
        Command::Mcp(cli::McpCommandArgs {
            command: Some(command),
            ..
        }) => {
            let host = std::sync::Arc::new(context::open_host(&cli.global).await?);
            let result = commands::gateway::run(&host, command).await;
            host.shutdown().await;
            return result;
        }
        command => Cli {
            global: cli.global,
            command,
        },
    };
    // A profile may pin the workspace its callers work in.
    let profile = match &cli.command {
        Command::Call(args) => args.profile.clone(),
        Command::Tools {
            command: ToolsCommand::List { profile, .. },
        } => profile.clone(),
        Command::Serve(args) => args.selection.profile.clone(),
        _ => None,
    };
    let host = std::sync::Arc::new(context::open_host_as(&cli.global, profile.as_deref()).await?);
    let result = match cli.command {
        Command::Tools {
            command:
                ToolsCommand::List {
                    json,
                    group,
                    plane,
                    profile,
                    size,
                },
        } => match context::caller(&host, &cli.global) {
            Ok(caller) => commands::tools::list(
                &host,
                json,
                commands::tools::Filter {
                    group: group.as_deref(),
                    plane: plane.as_deref(),
                },
                profile.as_deref(),
                size,
                caller.as_ref(),
            ),
            Err(e) => Err(e),
        },
        Command::Tools {
            command: ToolsCommand::Groups { json },
        } => match context::caller(&host, &cli.global) {
            Ok(caller) => commands::tools::groups(&host, json, caller.as_ref()),
            Err(e) => Err(e),
        },
        Command::Tools {
            command: ToolsCommand::Show { name, json },
        } => commands::tools::show(&host, &name, json),
        Command::Call(args) => match context::caller(&host, &cli.global) {
            Ok(caller) => commands::call::run(&host, args, caller).await,
            Err(e) => Err(e),
        },
        Command::Plugins {
            command: PluginsCommand::List { json },
        } => commands::plugins::list(&host, json),
        Command::Plugins {
            command: PluginsCommand::Enable { id },
        } => commands::plugins::set_enabled(&host, &id, true).await,
        Command::Plugins {
            command: PluginsCommand::Disable { id },
        } => commands::plugins::set_enabled(&host, &id, false).await,
        Command::Plugins {
            command: PluginsCommand::Pause { id },
        } => commands::plugins::set_paused(&host, &id, true).await,
        Command::Plugins {
            command: PluginsCommand::Resume { id },
        } => commands::plugins::set_paused(&host, &id, false).await,
        Command::Plugins {
            command: PluginsCommand::Install(args),
        } => commands::plugins::install(&host, args).await,
        Command::Plugins {
            command: PluginsCommand::Uninstall { id },
        } => commands::plugins::uninstall(&host, &id).await,
        Command::Plugins {
            command: PluginsCommand::Search { text, json },
        } => commands::plugins::search(&host, &text, json).await,
        Command::Plugins {
            command: PluginsCommand::Update { id },
        } => commands::plugins::update(&host, &id).await,
        Command::Plugins {
            command: PluginsCommand::Health { id, json },
        } => commands::plugins::health(&host, id.as_deref(), json).await,
        Command::Plugins {
            command: PluginsCommand::Verify { id, json },
        } => commands::plugins::verify(&host, &id, json).await,
        Command::Plugins {
            command: PluginsCommand::Inspect { dir, json },
        } => commands::plugins::inspect(&dir, json),
        Command::Plugins {
            command: PluginsCommand::Reload { id },
        } => commands::plugins::reload(&host, &id).await,
        Command::Plugins {
            command: PluginsCommand::Logs { id, lines },
        } => commands::plugins::logs(&host, &id, lines),
        Command::Plugins {
            command: PluginsCommand::Config { id, key, value },
        } => commands::plugins::config(&host, &id, key.as_deref(), value.as_deref()),
        Command::Plugins {
            command: PluginsCommand::Grant { id, grants, list },
        } => commands::plugins::grant(&host, &id, grants, list).await,
        Command::Plugins {
            command: PluginsCommand::Revoke { id, grants, all },
        } => commands::plugins::revoke(&host, &id, grants, all).await,
        // Served above, before the host opens.
        Command::Mcp(_) => Ok(()),
        Command::Serve(args) => commands::serve::run(&host, &cli.global, args).await,
        Command::Token { command: None }
        | Command::Dashboard { .. }
        | Command::Completions { .. }
        | Command::Config { .. }
        | Command::Worker { .. }
        | Command::Ssh { .. }
        | Command::Workspace { .. }
        | Command::Store { .. }
        | Command::Audit(_) => Ok(()),
        Command::Token {
            command: Some(command),
        } => commands::token::run(&host, command),
        Command::Doctor { json } => commands::doctor::run(&host, json),
        Command::Approvals { command } => commands::approvals::run(&host, command),
        Command::Memory { command } => commands::memory::run(&host, command).await,
        Command::Policy {
            command:
                PolicyCommand::Test {
                    tool,
                    args,
                    owner,
                    json,
                },
        } => commands::policy::test(&host, &tool, args.as_deref(), &owner, json),
        Command::Sandbox {
            command: SandboxCommand::Check { json },
        } => commands::sandbox::check(&host, json),
    };
    host.shutdown().await;
    result
}
