//! The control socket: how `scx_cadence ctl` changes the policy of a running
//! scheduler without detaching it.
//!
//! One request per connection, one JSON object on one line, answered by one
//! JSON line. The socket is root-only (mode 0600, and the peer's uid is
//! checked). Bad requests are answered with an error and never reach the
//! scheduler; the server keeps serving.

pub mod client;
pub mod server;

use std::io::{ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::socket::sockopt::PeerCredentials;
use nix::sys::socket::{MsgFlags, getsockopt, recv};
use serde::{Deserialize, Serialize};

use crate::idle::table_file::TableFile;

/// Where the scheduler listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/scx_cadence/ctl.sock";

/// Largest request accepted, in bytes. A policy file is well under 4 KiB;
/// 64 KiB leaves room for the idle-state tables later policies carry.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Largest `idle_load` request. The client, not the scheduler, reads and
/// writes the files of `ctl idle save/load`: paths and permissions are the
/// caller's (the scheduler's working directory and mount namespace, e.g. a
/// service's private /tmp, may not be), and the scheduler opens no file a
/// request names. So the tables travel on the socket: 1024 CPUs
/// (CADENCE_MAX_CPUS) of up to ~1.3 KB of JSON each (idle::table_file's
/// the_largest_file_fits_a_request measures the widest), under 2 MiB. Only
/// this command may be larger than MAX_REQUEST.
pub const MAX_IDLE_REQUEST: usize = 2 * 1024 * 1024;

/// A request, as sent on the socket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// Switch to a preset (@text None) or to a policy file whose absolute
    /// @policy path and @text the client read.
    Switch {
        policy: String,
        text: Option<String>,
    },
    /// Change some fields of the policy in force.
    Set { assignments: Vec<String> },
    /// Report the policy in force. (A struct variant, so that unknown
    /// fields are refused here too.)
    Get {},
    /// Every online CPU's learned idle table (`ctl idle save`), in the
    /// reply's `idle`.
    #[serde(rename = "idle_save")]
    IdleSave {},
    /// Replace every online CPU's idle table with @file's, if it fits.
    #[serde(rename = "idle_load")]
    IdleLoad { file: TableFile },
    /// Make every online CPU's idle table fresh.
    #[serde(rename = "idle_reset")]
    IdleReset {},
}

/// The answer to every request, good or bad.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// Why the request was refused; None if it was carried out.
    pub error: Option<String>,
    /// The generation in force after the request (0 if unknown).
    pub generation: u64,
    /// The name of the policy in force.
    pub name: String,
    /// The policy in force, as TOML.
    pub policy: String,
    /// The same policy as BPF holds it (struct cadence_policy by field).
    #[serde(default)]
    pub bpf: std::collections::BTreeMap<String, u64>,
    /// The answer to `idle_save`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<TableFile>,
}

impl Reply {
    pub fn error(msg: impl Into<String>) -> Self {
        Self {
            error: Some(msg.into()),
            ..Default::default()
        }
    }
}

/// Reads from a socket with one deadline for all reads together: each read
/// waits at most for the time left, so a peer that dribbles a byte at a
/// time cannot stretch a request past @until.
///
/// The deadline bounds waiting for the peer, not our own delays: once it
/// has passed, a read still takes what the socket already holds and fails
/// only if it holds nothing. A reader that was not run for the whole time
/// (a busy machine) then still gets a request that arrived on time.
pub struct ReadBy<'a> {
    pub conn: &'a UnixStream,
    pub until: Instant,
}

impl Read for ReadBy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return match recv(self.conn.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT) {
                Ok(n) => Ok(n),
                Err(Errno::EAGAIN) => Err(ErrorKind::TimedOut.into()),
                Err(e) => Err(e.into()),
            };
        }
        self.conn.set_read_timeout(Some(left))?;
        let mut conn = self.conn;
        conn.read(buf)
    }
}

/// The uid of the process at the other end of @conn (SO_PEERCRED: for a
/// client, the process that called listen(); for the server, the client).
pub fn peer_uid(conn: &UnixStream) -> Option<u32> {
    getsockopt(conn, PeerCredentials).ok().map(|c| c.uid())
}
