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

use super::{MAX_REQUEST, ReadBy, Reply, Request, peer_uid};

/// How long a client may take to send its whole request: a stalled or
/// dribbling client cannot hold the server up for longer.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a request may wait for the scheduler's loop, which may be busy
/// re-attaching after CPU hotplug (tests/vm: under 20 s).
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);

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
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
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

/// Reads up to the first newline (or EOF), refusing more than MAX_REQUEST.
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
        if buf.len() > MAX_REQUEST {
            break;
        }
        if n == 0 {
            break;
        }
    }
    if buf.len() > MAX_REQUEST {
        return Err(format!("the request exceeds {MAX_REQUEST} bytes"));
    }
    Ok(buf)
}

/// One JSON request; unknown commands and fields are named in the error.
pub fn parse_request(text: &str) -> Result<Request, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the request is not JSON ({e})"))?;
    let cmd = value
        .get("cmd")
        .and_then(|c| c.as_str())
        .unwrap_or("")
        .to_string();
    if !["switch", "set", "get"].contains(&cmd.as_str()) {
        return Err(format!(
            "unknown command `{cmd}`: the commands are switch, set and get"
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
            "unknown command `reboot`: the commands are switch, set and get"
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
        let big = vec![b'x'; MAX_REQUEST + 10];
        let e = read_line(&mut &big[..]).unwrap_err();
        assert_eq!(e, format!("the request exceeds {MAX_REQUEST} bytes"));
        let exact = vec![b'x'; MAX_REQUEST];
        assert_eq!(read_line(&mut &exact[..]).unwrap().len(), MAX_REQUEST);
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
