//! The scheduler's end of the control socket. A thread accepts connections
//! and checks each request; well-formed ones are handed to the scheduler's
//! loop over a channel, which answers after applying (or refusing) them.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam::channel::{Receiver, Sender, bounded};

use super::{MAX_IDLE_REQUEST, MAX_REQUEST, ReadBy, Reply, Request, peer_uid};

/// How long a client may take to send its whole request: a stalled or
/// dribbling client cannot hold the server up for longer.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a request may wait for the scheduler's loop, which may be busy
/// re-attaching after CPU hotplug (tests/vm: under 20 s).
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to read its answer (an `idle_save` answer
/// is up to ~1.3 MB, more than the socket holds): one that does not read
/// cannot hold the server up for longer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A checked request and where its answer goes.
pub struct Pending {
    pub request: Request,
    pub reply: Sender<Reply>,
}

/// The listening socket; removed when dropped.
pub struct Server {
    path: PathBuf,
}

impl Server {
    /// Binds @path (its directory made 0700 if missing, the socket 0600)
    /// and serves it from a thread. Requests arrive on the returned channel.
    pub fn start(path: &Path) -> Result<(Self, Receiver<Pending>)> {
        crate::instance::create_parent_dir(path, "control socket")?;
        // The caller holds the instance lock, so a socket here is stale;
        // anything else is not ours to remove.
        crate::owned::remove_stale_socket(path)?;
        let listener =
            UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} root-only", path.display()))?;
        let (tx, rx) = bounded(16);
        std::thread::Builder::new()
            .name("ctl-server".into())
            .spawn(move || serve(listener, tx))?;
        Ok((
            Self {
                path: path.to_path_buf(),
            },
            rx,
        ))
    }
}

impl Drop for Server {
    /// Removes the socket only if it is still one of ours, as start()
    /// checks: something put at its path meanwhile is not ours to remove.
    fn drop(&mut self) {
        let _ = crate::owned::remove_stale_socket(&self.path);
    }
}

fn serve(listener: UnixListener, tx: Sender<Pending>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let reply = match check_request(&mut conn) {
            Ok(request) => forward(&tx, request),
            Err(msg) => Reply::error(msg),
        };
        if let Ok(mut line) = serde_json::to_vec(&reply) {
            line.push(b'\n');
            let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
            let _ = conn.write_all(&line);
        }
    }
}

/// Hands @request to the scheduler's loop and waits for its answer.
fn forward(tx: &Sender<Pending>, request: Request) -> Reply {
    let (reply_tx, reply_rx) = bounded(1);
    let pending = Pending {
        request,
        reply: reply_tx,
    };
    if tx.send_timeout(pending, APPLY_TIMEOUT).is_err() {
        return Reply::error("the scheduler is not taking requests (exiting?)");
    }
    reply_rx
        .recv_timeout(APPLY_TIMEOUT)
        .unwrap_or_else(|_| Reply::error("the scheduler did not answer in time"))
}

/// Reads and parses one request; the error is the message the client gets.
fn check_request(conn: &mut UnixStream) -> Result<Request, String> {
    match peer_uid(conn) {
        Some(0) => {}
        Some(uid) => return Err(format!("permission denied: uid {uid} is not root")),
        None => return Err("cannot identify the peer".into()),
    }
    let bytes = read_request(conn, READ_TIMEOUT)?;
    let text =
        std::str::from_utf8(&bytes).map_err(|e| format!("the request is not valid UTF-8 ({e})"))?;
    parse_request(text)
}

/// The request line on @conn, which must arrive whole @within.
fn read_request(conn: &UnixStream, within: Duration) -> Result<Vec<u8>, String> {
    let mut by = ReadBy {
        conn,
        until: Instant::now() + within,
    };
    read_line(&mut by).map_err(|e| {
        if e == NO_REQUEST {
            format!("no request within {} s", within.as_secs_f64())
        } else {
            e
        }
    })
}

/// read_line's error when the deadline passed first.
const NO_REQUEST: &str = "timed out";

/// Reads up to the first newline (or EOF), refusing more than
/// MAX_IDLE_REQUEST (parse_request holds the rest to MAX_REQUEST).
fn read_line(conn: &mut impl Read) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match conn.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(NO_REQUEST.into());
            }
            Err(e) => return Err(format!("reading the request: {e}")),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            buf.truncate(end);
            break;
        }
        if buf.len() > MAX_IDLE_REQUEST {
            break;
        }
        if n == 0 {
            break;
        }
    }
    if buf.len() > MAX_IDLE_REQUEST {
        return Err(format!("the request exceeds {MAX_IDLE_REQUEST} bytes"));
    }
    Ok(buf)
}

/// The commands a request may name.
const COMMANDS: [&str; 6] = [
    "switch",
    "set",
    "get",
    "idle_save",
    "idle_load",
    "idle_reset",
];

/// One JSON request; unknown commands and fields are named in the error.
/// Only `idle_load` may be longer than MAX_REQUEST.
pub fn parse_request(text: &str) -> Result<Request, String> {
    let value: Result<serde_json::Value, _> = serde_json::from_str(text);
    let cmd = value
        .as_ref()
        .ok()
        .and_then(|v| v.get("cmd"))
        .and_then(|c| c.as_str())
        .unwrap_or("")
        .to_string();
    if cmd != "idle_load" && text.len() > MAX_REQUEST {
        return Err(format!("the request exceeds {MAX_REQUEST} bytes"));
    }
    let value = value.map_err(|e| format!("the request is not JSON ({e})"))?;
    if !COMMANDS.contains(&cmd.as_str()) {
        return Err(format!(
            "unknown command `{cmd}`: the commands are {}",
            COMMANDS.join(", ")
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("bad `{cmd}` request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_bad_ones_are_named() {
        assert_eq!(parse_request(r#"{"cmd":"get"}"#), Ok(Request::Get {}));
        assert_eq!(
            parse_request(r#"{"cmd":"set","assignments":["slice.max_us=5"]}"#),
            Ok(Request::Set {
                assignments: vec!["slice.max_us=5".into()]
            })
        );
        assert_eq!(
            parse_request(r#"{"cmd":"reboot"}"#).unwrap_err(),
            "unknown command `reboot`: the commands are switch, set, get, \
             idle_save, idle_load, idle_reset"
        );
        assert_eq!(
            parse_request(r#"{"cmd":"idle_reset"}"#),
            Ok(Request::IdleReset {})
        );
        assert_eq!(
            parse_request(r#"{"cmd":"idle_save"}"#),
            Ok(Request::IdleSave {})
        );
        assert!(
            parse_request(r#"{"cmd":"idle_load"}"#)
                .unwrap_err()
                .starts_with("bad `idle_load` request: missing field `file`")
        );
        assert!(
            parse_request("{")
                .unwrap_err()
                .starts_with("the request is not JSON")
        );
        assert!(
            parse_request(r#"{"cmd":"switch"}"#)
                .unwrap_err()
                .starts_with("bad `switch` request: missing field `policy`")
        );
        assert!(
            parse_request(r#"{"cmd":"get","x":1}"#)
                .unwrap_err()
                .contains("unknown field `x`")
        );
    }

    #[test]
    fn reads_stop_at_the_newline_and_at_the_size_limit() {
        let mut two = &b"{\"cmd\":\"get\"}\nrest"[..];
        assert_eq!(read_line(&mut two).unwrap(), b"{\"cmd\":\"get\"}");
        let big = vec![b'x'; MAX_IDLE_REQUEST + 10];
        let e = read_line(&mut &big[..]).unwrap_err();
        assert_eq!(e, format!("the request exceeds {MAX_IDLE_REQUEST} bytes"));
        let exact = vec![b'x'; MAX_IDLE_REQUEST];
        assert_eq!(read_line(&mut &exact[..]).unwrap().len(), MAX_IDLE_REQUEST);
    }

    #[test]
    fn only_idle_load_may_exceed_the_policy_limit() {
        let pad = " ".repeat(MAX_REQUEST);
        let get = format!("{{\"cmd\":\"get\"{pad}}}");
        assert_eq!(
            parse_request(&get).unwrap_err(),
            format!("the request exceeds {MAX_REQUEST} bytes")
        );
        let junk = "x".repeat(MAX_REQUEST + 1);
        assert_eq!(
            parse_request(&junk).unwrap_err(),
            format!("the request exceeds {MAX_REQUEST} bytes")
        );
        let load = format!("{{\"cmd\":\"idle_load\"{pad}}}");
        assert!(
            parse_request(&load)
                .unwrap_err()
                .starts_with("bad `idle_load` request: missing field `file`")
        );
    }

    /// A client that sends one byte every 50 ms, never a newline, for 3 s.
    fn dribble(mut tx: UnixStream) {
        for _ in 0..60 {
            if tx.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn a_dribbling_client_gets_one_deadline_for_the_whole_request() {
        let (rx, tx) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || dribble(tx));
        // Each byte comes well within 500 ms; the request does not.
        let e = read_request(&rx, Duration::from_millis(500)).unwrap_err();
        assert_eq!(e, "no request within 0.5 s");
        drop(rx);
        t.join().unwrap();
    }

    /// A reader whose deadline passed before it first read (a server thread
    /// not run for the whole READ_TIMEOUT on a loaded machine) still takes
    /// the request that is waiting, and fails at once without one.
    #[test]
    fn a_late_reader_takes_the_request_that_came_on_time() {
        let (rx, mut tx) = UnixStream::pair().unwrap();
        let past = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let mut by = ReadBy {
            conn: &rx,
            until: past,
        };
        assert_eq!(read_line(&mut by).unwrap_err(), NO_REQUEST);
        tx.write_all(b"{\"cmd\":\"get\"}\n").unwrap();
        assert_eq!(read_line(&mut by).unwrap(), b"{\"cmd\":\"get\"}");
    }

    #[test]
    fn only_a_socket_is_replaced_at_the_socket_path() {
        let s = crate::owned::tests::Scratch::new("sock-file");
        let path = s.0.join("ctl.sock");
        std::fs::write(&path, "not a socket").unwrap();
        let e = Server::start(&path).err().unwrap().to_string();
        assert_eq!(
            e,
            format!(
                "refusing to replace {}: it is not a socket (choose another --ctl-socket)",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"not a socket");

        // A socket a killed instance left is replaced.
        let path = s.0.join("stale.sock");
        drop(UnixListener::bind(&path).unwrap());
        let (server, _rx) = Server::start(&path).unwrap();
        UnixStream::connect(&path).unwrap();
        drop(server);
        assert!(!path.exists());
    }

    #[test]
    fn a_symlinked_socket_dir_is_refused() {
        let s = crate::owned::tests::Scratch::new("sock-link");
        let target = s.0.join("target");
        std::fs::create_dir(&target).unwrap();
        let link = s.0.join("run");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = Server::start(&link.join("ctl.sock"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            format!(
                "refusing {} as the control socket directory: it is a symbolic link",
                link.display()
            )
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }
}
