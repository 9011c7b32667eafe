//! `scx_cadence ctl`: sends one request to the running scheduler and prints
//! the answer.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{ReadBy, Reply, Request, peer_uid};
use crate::idle::table_file::TableFile;

/// The deadline for a whole request, from connect to the answer's newline:
/// the scheduler may be re-attaching after hotplug (server.rs's
/// APPLY_TIMEOUT, 30 s), plus 5 s to spare.
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
    send_within(socket, request, REPLY_TIMEOUT)
}

/// send() with @within for the whole exchange. The server must run as root
/// or as us: anyone else listening there would read our request and could
/// forge the answer.
fn send_within(socket: &Path, request: &Request, within: Duration) -> Result<Reply> {
    let until = Instant::now() + within;
    let conn = UnixStream::connect(socket).with_context(|| {
        format!(
            "connecting to {}: is scx_cadence running, and are you root?",
            socket.display()
        )
    })?;
    let me = crate::owned::euid();
    match peer_uid(&conn) {
        Some(uid) if uid == 0 || uid == me => {}
        Some(uid) => bail!(
            "refusing the server at {}: it runs as uid {uid}, not as root or uid {me}",
            socket.display()
        ),
        None => bail!("cannot identify the server at {}", socket.display()),
    }
    let late = || {
        format!(
            "no answer from {} within {} s",
            socket.display(),
            within.as_secs_f64()
        )
    };
    // A request fits the socket buffer (all but a large `idle_load`,
    // which the server reads at once): the deadline is kept by the reads.
    conn.set_write_timeout(Some(within))?;
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    (&conn)
        .write_all(&line)
        .with_context(|| format!("sending the request to {}", socket.display()))?;
    let mut answer = String::new();
    match BufReader::new(ReadBy { conn: &conn, until }).read_line(&mut answer) {
        Ok(_) => {}
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => bail!(late()),
        Err(e) => return Err(e).context("reading the answer"),
    }
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

/// `ctl idle save FILE`: the scheduler sends the tables, this writes them
/// (through a temporary file beside @file, renamed over it: a reader never
/// sees half a file). Returns the number of CPUs.
pub fn idle_save(socket: &Path, file: &Path) -> Result<usize> {
    let reply = send(socket, &Request::IdleSave {})?;
    if let Some(e) = reply.error {
        bail!("{e}");
    }
    let tables = reply
        .idle
        .context("the scheduler's answer holds no idle tables")?;
    let name = file
        .file_name()
        .with_context(|| format!("{} names no file", file.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = file.with_file_name(tmp_name);
    std::fs::write(&tmp, tables.to_text())
        .and_then(|()| std::fs::rename(&tmp, file))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .with_context(|| format!("writing idle tables to {}", file.display()))?;
    Ok(tables.cpus.len())
}

/// `ctl idle load FILE`: reads and parses @file here, the scheduler checks
/// it against its CPUs and states and writes it. Returns the CPUs loaded.
pub fn idle_load(socket: &Path, file: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading idle tables from {}", file.display()))?;
    let tables = TableFile::parse(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| file.display().to_string())?;
    let n = tables.cpus.len();
    let reply = send(socket, &Request::IdleLoad { file: tables })?;
    if let Some(e) = reply.error {
        bail!("{}: {e}; the tables in force stay", file.display());
    }
    Ok(n)
}

/// `ctl idle reset`.
pub fn idle_reset(socket: &Path) -> Result<()> {
    if let Some(e) = send(socket, &Request::IdleReset {})?.error {
        bail!("{e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owned::tests::Scratch;
    use nix::sys::socket::{
        AddressFamily, Backlog, SockFlag, SockType, UnixAddr, bind, listen, socket,
    };
    use std::io::Read;
    use std::os::unix::io::AsRawFd;
    use std::os::unix::net::UnixListener;

    /// Answers one request at @listener with a good reply, one byte every
    /// @gap.
    fn answer(listener: UnixListener, gap: Duration) {
        let (mut conn, _) = listener.accept().unwrap();
        let mut byte = [0u8];
        while conn.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {}
        let mut line = serde_json::to_vec(&Reply::default()).unwrap();
        line.push(b'\n');
        for b in line {
            if conn.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(gap);
        }
    }

    #[test]
    fn a_dribbling_server_gets_one_deadline_for_the_whole_request() {
        let s = Scratch::new("client-dribble");
        let path = s.0.join("ctl.sock");
        let listener = UnixListener::bind(&path).unwrap();
        // About 50 bytes at 50 ms each: 2.5 s, each byte well within 0.5 s.
        let t = std::thread::spawn(move || answer(listener, Duration::from_millis(50)));
        let e = send_within(&path, &Request::Get {}, Duration::from_millis(500))
            .unwrap_err()
            .to_string();
        assert_eq!(e, format!("no answer from {} within 0.5 s", path.display()));
        t.join().unwrap();
        // The same server answering at once is fine.
        let listener = UnixListener::bind(s.0.join("fast.sock")).unwrap();
        let t = std::thread::spawn(move || answer(listener, Duration::ZERO));
        send_within(&s.0.join("fast.sock"), &Request::Get {}, REPLY_TIMEOUT).unwrap();
        t.join().unwrap();
    }

    /// A listening socket at @path whose SO_PEERCRED is @uid's: listen(2)
    /// records the credentials of its caller, here a thread that drops to
    /// @uid alone (the raw syscall, unlike libc's setresuid() that nix's
    /// wraps, changes only the calling thread).
    fn listen_as(path: &Path, uid: u32) -> UnixListener {
        let path = path.to_owned();
        std::thread::spawn(move || {
            let fd = socket(
                AddressFamily::Unix,
                SockType::Stream,
                SockFlag::SOCK_CLOEXEC,
                None,
            )
            .unwrap();
            bind(fd.as_raw_fd(), &UnixAddr::new(&path).unwrap()).unwrap();
            // SAFETY: setresuid(2) takes three integers and touches no memory.
            assert_eq!(
                unsafe { libc::syscall(libc::SYS_setresuid, uid, uid, uid) },
                0
            );
            listen(&fd, Backlog::new(1).unwrap()).unwrap();
            UnixListener::from(fd)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_server_of_another_user_is_refused() {
        if crate::bpf_test_progs::skip_without_root("serving as another uid needs root") {
            return;
        }
        let s = Scratch::new("client-peer");
        let path = s.0.join("ctl.sock");
        let listener = listen_as(&path, 65534);
        let t = std::thread::spawn(move || {
            // It reads what it is sent, and answers if it gets a request.
            let (mut conn, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut byte = [0u8];
            while conn.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
                got.push(byte[0]);
            }
            let _ = conn.write_all(
                b"{\"error\":null,\"generation\":7,\"name\":\"forged\",\"policy\":\"\"}\n",
            );
            got
        });
        let e = send_within(&path, &Request::Get {}, REPLY_TIMEOUT)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "refusing the server at {}: it runs as uid 65534, not as root or uid 0",
                path.display()
            )
        );
        // It never saw the request.
        assert_eq!(t.join().unwrap(), b"");
    }
}
