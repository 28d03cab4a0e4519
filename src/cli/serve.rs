//! `baton serve` (the HTTP API with Server-Sent Events, and MCP at `/mcp`) and `baton mcp`
//! (MCP over stdio): flags to a [`baton::server::ServerConfig`], then the library's server.

use std::net::SocketAddr;
use std::time::Duration;

use baton::server::{Server, ServerConfig};

use super::{ConnectionArgs, StateArg, EXIT_DONE, EXIT_FAILED, EXIT_USAGE};

/// What both servers take.
#[derive(clap::Args, Debug)]
pub(crate) struct ServerArgs {
    /// A directory under which roots and corpora may be used (repeatable; default: the
    /// current directory). A relative root in a request is taken from the first.
    #[arg(long = "allow-root", value_name = "DIR")]
    allow_roots: Vec<std::path::PathBuf>,
    /// A model spec a request may name (repeatable); `offline` is always allowed. Base URLs
    /// and keys come from this process's environment, never from a request.
    #[arg(long = "allow-model", value_name = "SPEC")]
    allow_models: Vec<String>,
    /// Runs at once; beyond it a start or resume is refused (429, Retry-After).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_runs: u32,
    /// Extra role profiles (`*.toml`) adding to or replacing the built-in ones; a role may
    /// reserve effects for approval (`approve = ["read"]`), decided over the approvals routes.
    #[arg(long)]
    roles: Option<std::path::PathBuf>,
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    state: StateArg,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// Where to listen. Beyond loopback, BATON_TOKEN must be set.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: SocketAddr,
    /// Seconds between keep-alive comments on an idle event stream.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    keep_alive_secs: u64,
    /// The largest request body taken, in bytes (larger: 413).
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1024..=16_777_216))]
    max_body_bytes: u64,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(clap::Args, Debug)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// The server the flags describe (BATON_TOKEN read here: never from a flag, so it shows in
/// no process listing); one line on error.
fn server(args: &ServerArgs, edit: impl FnOnce(&mut ServerConfig)) -> Result<Server, String> {
    let mut config = ServerConfig::new(args.state.state.clone());
    config.allow_roots = args.allow_roots.clone();
    config.allow_models = args.allow_models.clone();
    config.max_runs = args.max_runs as usize;
    config.roles = args.roles.clone();
    config.models = args.connection.settings()?;
    config.token = std::env::var("BATON_TOKEN").ok().filter(|t| !t.is_empty());
    if let Some(token) = &config.token {
        baton::model::ApiKey::new(token.clone());
    }
    edit(&mut config);
    Server::new(config)
}

/// `baton serve`: runs until the process is stopped (Ctrl-C or a signal).
pub(crate) async fn serve(args: ServeArgs) -> i32 {
    let server = match server(&args.server, |c| {
        c.keep_alive = Duration::from_secs(args.keep_alive_secs);
        c.body_limit = args.max_body_bytes as usize;
    }) {
        Ok(s) => s,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let listening = match baton::server::serve(server, args.addr).await {
        Ok(l) => l,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    super::to_stderr(&format!("baton: listening on http://{}\n", listening.addr));
    tokio::select! {
        served = listening.task => match served {
            Ok(Ok(())) => EXIT_DONE,
            Ok(Err(e)) => {
                say!("the server failed: {e}");
                EXIT_FAILED
            }
            Err(e) => {
                say!("the server failed: {e}");
                EXIT_FAILED
            }
        },
        _ = tokio::signal::ctrl_c() => EXIT_DONE,
    }
}

/// `baton mcp`: serves MCP on stdin and stdout until the client closes them, then waits for
/// the runs it started to end. Its roles may not reserve effects for approval: no MCP tool
/// decides a request.
pub(crate) async fn mcp(args: McpArgs) -> i32 {
    if let Some(dir) = &args.server.roles {
        if let Err(e) = super::approvals_undecidable(dir) {
            say!(
                "{}",
                e.replace("the command line cannot", "baton mcp cannot")
            );
            return EXIT_USAGE;
        }
    }
    let server = match server(&args.server, |_| {}) {
        Ok(s) => s,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let served = baton::server::serve_stdio(server.clone()).await;
    // The client has gone: runs it started as handles (start_explore) still finish.
    let left = server.running();
    if left > 0 {
        say!("waiting for {left} run(s) started over MCP to end (Ctrl-C leaves them interrupted: `baton resume` continues them)");
        tokio::select! {
            _ = server.wait_all() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    match served {
        Ok(()) => EXIT_DONE,
        Err(e) => {
            say!("{e}");
            EXIT_FAILED
        }
    }
}
