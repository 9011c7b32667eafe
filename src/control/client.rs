//! `scx_cadence ctl`: sends one request to the running scheduler and prints
//! the answer.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::{Reply, Request};

/// The scheduler may be re-attaching after hotplug; see server.rs.
const REPLY_TIMEOUT: Duration = Duration::from_secs(35);

/// The request for `ctl switch ARG`: a preset goes by name, a file is read
/// here (the scheduler's working directory is not the caller's) and sent
/// with its absolute path, which SIGHUP reloads later.
pub fn switch_request(arg: &str) -> Result<Request> {
    if !(arg.contains('/') || arg.ends_with(".toml")) {
        return Ok(Request::Switch {
            policy: arg.to_string(),
            text: None,
        });
    }
    let path = std::path::absolute(arg).with_context(|| format!("resolving {arg}"))?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading policy file {}", path.display()))?;
    Ok(Request::Switch {
        policy: path.to_string_lossy().into_owned(),
        text: Some(text),
    })
}

/// Sends @request to the scheduler at @socket and returns its answer.
pub fn send(socket: &Path, request: &Request) -> Result<Reply> {
    let mut conn = UnixStream::connect(socket).with_context(|| {
        format!(
            "connecting to {}: is scx_cadence running, and are you root?",
            socket.display()
        )
    })?;
    conn.set_read_timeout(Some(REPLY_TIMEOUT))?;
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    conn.write_all(&line)?;
    let mut answer = String::new();
    BufReader::new(conn).read_line(&mut answer)?;
    if answer.is_empty() {
        bail!("the scheduler closed the connection without an answer");
    }
    serde_json::from_str(&answer).context("the answer is not a reply")
}

/// Prints @reply the way `ctl` shows it; an error becomes the command's.
pub fn print(reply: &Reply, show_policy: bool) -> Result<()> {
    if let Some(e) = &reply.error {
        bail!("{e}");
    }
    println!("generation {} policy {}", reply.generation, reply.name);
    if show_policy {
        print!("{}", reply.policy);
    }
    Ok(())
}
