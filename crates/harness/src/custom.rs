//! A server a command starts (Caddy, nginx, ngtcp2, a quiche server,
//! Node; a suite's `server_cmd` or a probe's `--server-cmd`): its
//! placeholders filled in, its certificate and served directory made
//! ready, and its start awaited on the transport the cell uses.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use h3lab_results::Proto;
use h3lab_supervise::{Group, Supervised};
use linkem::run::Placement;

use crate::End;

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// What a command's placeholders stand for in one cell.
pub struct Custom<'a> {
    /// The command, for `sh -c`, with `{ip}`, `{port}`, `{site}`, `{cert}`
    /// and `{key}` to fill in.
    pub shell: &'a str,
    /// Where it is to listen.
    pub addr: SocketAddr,
    /// The page cell's site, served at `/`; `None` for other cells.
    pub site: Option<&'a Path>,
    /// The response body size of an `rps`, `download` or `ttfb` cell,
    /// served as `/bytes/N` from a directory made for it.
    pub body_size: Option<u64>,
    /// Where bodies are kept for the whole run (they are reused).
    pub run_scratch: &'a Path,
    /// Where the cell's certificate is written.
    pub cell_scratch: &'a Path,
    /// The cell's protocol: the server is ready once it listens on the
    /// transport this protocol uses.
    pub protocol: Proto,
    /// Where it runs: the server end, or the origin behind an edge.
    pub end: End,
}

/// A started server command.
pub struct Started {
    /// The server's process group.
    pub process: Supervised,
    /// The certificate the client is to trust (`{cert}`), if it was given one.
    pub cert: Option<PathBuf>,
}

/// Starts the command in the server namespace and waits until it listens.
pub fn start(placement: &Placement<'_>, custom: &Custom<'_>) -> anyhow::Result<Started> {
    let addr = custom.addr;
    // Servers may pass through the scratch space (to each cell's directory)
    // without listing it.
    std::fs::set_permissions(
        custom.run_scratch,
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .with_context(|| format!("cannot open {} to the server", custom.run_scratch.display()))?;
    let (shell, cert) = expand(custom)?;
    if let Placement::Loopback = placement {
        check_free(addr)?;
    }
    let mut command = custom.end.command(placement, "sh")?;
    command
        .stdin(Stdio::null())
        .arg("-c")
        .arg(&shell)
        // What the server writes aside (configurations, logs) goes with
        // the cell's scratch space.
        .env("TMPDIR", custom.cell_scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // In a process group of its own, so that a terminal's Ctrl-C reaches
    // only h3lab, which then stops the whole group (nginx's workers too).
    let mut process = Supervised::spawn(command, Group::Own, &format!("server command `{shell}`"))?;
    wait_until_listening(placement, custom.end, addr, custom.protocol, &mut process).map_err(
        |err| {
            process.stop(Duration::from_secs(1));
            anyhow!(
                "server command `{shell}` did not start: {err}{}",
                process.last_stderr_line()
            )
        },
    )?;
    Ok(Started { process, cert })
}

/// The command with its placeholders replaced, and the certificate the
/// client is to trust when the command asked for one.
fn expand(custom: &Custom<'_>) -> anyhow::Result<(String, Option<PathBuf>)> {
    let mut shell = custom
        .shell
        .replace("{ip}", &custom.addr.ip().to_string())
        .replace("{port}", &custom.addr.port().to_string());
    if shell.contains("{site}") {
        let dir = match (custom.site, custom.body_size) {
            (Some(site), _) => site.to_path_buf(),
            (None, Some(size)) => bodies_dir(custom.run_scratch, size)?,
            (None, None) => bail!("this cell has no directory for `{{site}}`"),
        };
        if dir.starts_with(custom.run_scratch) {
            open_to_servers(&dir)?;
        }
        shell = shell.replace("{site}", &quoted(&dir));
    }
    let mut cert = None;
    if shell.contains("{cert}") || shell.contains("{key}") {
        let (cert_path, key_path) = write_certificate(custom.cell_scratch, custom.addr.ip())?;
        open_to_servers(custom.cell_scratch)?;
        shell = shell
            .replace("{cert}", &quoted(&cert_path))
            .replace("{key}", &quoted(&key_path));
        cert = Some(cert_path);
    }
    Ok((shell, cert))
}

/// A path as one word of `sh -c`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The body `probe offer` asks an h3 server for to count its first round
/// trip: larger than any initial window.
pub const FIRST_FLIGHT_BODY_SIZE: u64 = 1_000_000;

/// A directory holding `bytes/SIZE`, a body of SIZE bytes that does not
/// compress (so no server's compression changes what crosses the path),
/// and `bytes/FIRST_FLIGHT_BODY_SIZE`, made once per run and size.
fn bodies_dir(run_scratch: &Path, size: u64) -> anyhow::Result<PathBuf> {
    let dir = run_scratch.join(format!("bodies-{size}"));
    let body = dir.join("bytes").join(size.to_string());
    if body.is_file() {
        return Ok(dir);
    }
    let partial = run_scratch.join(format!(".bodies-{size}.partial"));
    std::fs::create_dir_all(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    write_incompressible(&partial.join(size.to_string()), size)?;
    let first_flight = FIRST_FLIGHT_BODY_SIZE;
    write_incompressible(&partial.join(first_flight.to_string()), first_flight)?;
    std::fs::create_dir_all(&dir)?;
    std::fs::rename(&partial, dir.join("bytes"))
        .with_context(|| format!("cannot move the bodies to {}", dir.display()))?;
    Ok(dir)
}

/// SIZE bytes of a fixed pseudo-random sequence (xorshift), written in
/// blocks so a gigabyte needs no gigabyte of memory.
fn write_incompressible(path: &Path, size: u64) -> anyhow::Result<()> {
    use std::io::Write;
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut left = size;
    let mut block = [0u8; 8192];
    while left > 0 {
        for word in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        let take = left.min(block.len() as u64) as usize;
        out.write_all(&block[..take])?;
        left -= take as u64;
    }
    out.flush()?;
    Ok(())
}

/// Makes `path`, and everything under it, readable to other users:
/// servers drop to users of their own (nginx's workers run as nobody),
/// and the run's scratch space is private by default.
fn open_to_servers(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::symlink_metadata(path)?;
    let mut permissions = metadata.permissions();
    let readable = if metadata.is_dir() { 0o555 } else { 0o444 };
    permissions.set_mode(permissions.mode() | readable);
    std::fs::set_permissions(path, permissions)
        .with_context(|| format!("cannot make {} readable to the server", path.display()))?;
    if metadata.is_dir() {
        for entry in std::fs::read_dir(path)? {
            open_to_servers(&entry?.path())?;
        }
    }
    Ok(())
}

/// A self-signed certificate naming the server's address, `localhost` and
/// the site's name on a path with DNS, and its key, for `{cert}` and
/// `{key}`.
fn write_certificate(dir: &Path, ip: IpAddr) -> anyhow::Result<(PathBuf, PathBuf)> {
    let generated = rcgen::generate_simple_self_signed(vec![
        ip.to_string(),
        "localhost".into(),
        crate::SITE_HOST.into(),
    ])
    .context("generating the server's certificate")?;
    let cert = dir.join("custom-server-cert.pem");
    let key = dir.join("custom-server-key.pem");
    std::fs::write(&cert, generated.cert.pem())
        .with_context(|| format!("cannot write {}", cert.display()))?;
    std::fs::write(&key, generated.signing_key.serialize_pem())
        .with_context(|| format!("cannot write {}", key.display()))?;
    Ok((cert, key))
}

/// On loopback a server command shares ports with every other program:
/// if one already listens on `addr`, the cells would measure it, not the
/// command's server, which fails to bind.
fn check_free(addr: SocketAddr) -> anyhow::Result<()> {
    let in_use = |proto: &str, err: std::io::Error| match err.kind() {
        std::io::ErrorKind::PermissionDenied => anyhow!(
            "{proto} {addr} needs root to bind ({err}): set [target] port to 1024 or above, or \
             run h3lab with sudo"
        ),
        _ => anyhow!(
            "{proto} {addr} is already in use by another program ({err}), so the cells would \
             measure that program, not this server; stop it, or set another port with \
             [target] port"
        ),
    };
    TcpListener::bind(addr).map_err(|err| in_use("TCP", err))?;
    UdpSocket::bind(addr).map_err(|err| in_use("UDP", err))?;
    Ok(())
}

/// Waits until the server listens where the cell's protocol goes: a TCP
/// connect from the client side for h1, h2 and auto (which starts on
/// TCP), a bound UDP socket in the server's namespace for h3. A server
/// that binds UDP after TCP (Caddy) is therefore not raced by h3's first
/// connection, and an h3-only server (ngtcp2, quiche) needs no TCP port.
fn wait_until_listening(
    placement: &Placement<'_>,
    end: End,
    addr: SocketAddr,
    protocol: Proto,
    process: &mut Supervised,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if let Some(exit) = process.poll() {
            bail!("it exited with code {}", exit.code);
        }
        let listening = match protocol {
            Proto::H3 => udp_bound(process.id(), addr.port()),
            Proto::H1 | Proto::H2 | Proto::Auto => connects(placement, end, addr)?,
        };
        if listening {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let what = match protocol {
        Proto::H3 => "UDP",
        _ => "TCP",
    };
    bail!(
        "nothing listens on {what} {addr} after {}s",
        START_TIMEOUT.as_secs()
    )
}

/// Whether `addr` takes a TCP connection from where the server's peers are.
fn connects(placement: &Placement<'_>, end: End, addr: SocketAddr) -> anyhow::Result<bool> {
    let attempt = move || TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok();
    // Not being able to look (no root to enter the path) is its own
    // error: taken for "not yet", it became "nothing listens" 15 s later.
    end.run_beside(placement, attempt)
}

/// Whether a UDP socket on `port` exists in the network namespace of
/// process `pid` (the server command's shell, which its server shares),
/// IPv4 or IPv6 (Go servers bind a dual-stack `[::]` socket).
fn udp_bound(pid: u32, port: u16) -> bool {
    ["udp", "udp6"].iter().any(|table| {
        let table = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        udp_table_has_port(&table, port)
    })
}

/// Whether `/proc/net/udp`'s table lists a local socket on `port` (the
/// local address is `HEXIP:HEXPORT`).
fn udp_table_has_port(table: &str, port: u16) -> bool {
    table.lines().skip(1).any(|line| {
        line.split_whitespace()
            .nth(1)
            .and_then(|local| local.rsplit_once(':'))
            .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok())
            == Some(port)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_command_on_a_loopback_port_another_program_holds_fails_and_says_so() {
        let scratch = tempfile::tempdir().unwrap();
        let custom = |addr| Custom {
            shell: "sleep 30",
            addr,
            site: None,
            body_size: None,
            run_scratch: scratch.path(),
            cell_scratch: scratch.path(),
            protocol: Proto::H2,
            end: End::Server,
        };
        let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = squatter.local_addr().unwrap();
        let err = start(&Placement::Loopback, &custom(addr))
            .err()
            .expect("the port is taken");
        let message = format!("{err:#}");
        assert!(
            message.contains(&format!("TCP {addr} is already in use")),
            "{message}"
        );
        assert!(message.contains("[target] port"), "{message}");
        drop(squatter);
        // An address of its own, where no test's TCP connection can hold
        // the same port number and make TCP's check fail first.
        let udp = UdpSocket::bind("127.0.0.78:0").unwrap();
        let err = start(&Placement::Loopback, &custom(udp.local_addr().unwrap()))
            .err()
            .expect("the UDP port is taken");
        assert!(format!("{err:#}").contains("UDP 127.0.0.78:"), "{err:#}");
    }

    #[test]
    fn placeholders_become_the_address_a_served_directory_and_a_trusted_certificate() {
        let scratch = tempfile::tempdir().unwrap();
        let custom = Custom {
            shell: "serve {ip} {port} {site} {cert} {key}",
            addr: "198.18.0.2:443".parse().unwrap(),
            site: None,
            body_size: Some(1000),
            run_scratch: scratch.path(),
            cell_scratch: scratch.path(),
            protocol: Proto::H3,
            end: End::Server,
        };
        let (shell, cert) = expand(&custom).unwrap();
        let words: Vec<&str> = shell.split(' ').collect();
        assert_eq!(&words[..3], ["serve", "198.18.0.2", "443"]);
        let site = PathBuf::from(words[3].trim_matches('\''));
        let body = std::fs::read(site.join("bytes/1000")).unwrap();
        assert_eq!(body.len(), 1000);
        assert_ne!(body[..8], body[8..16], "the body is not a repeated pattern");
        let cert = cert.expect("{cert} makes the client trust the certificate");
        assert_eq!(words[4].trim_matches('\''), cert.display().to_string());
        let pem = std::fs::read_to_string(&cert).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        let key = std::fs::read_to_string(words[5].trim_matches('\'')).unwrap();
        assert!(key.contains("PRIVATE KEY"), "{key}");

        let page = Custom {
            shell: "serve {site}",
            site: Some(Path::new("/srv/my site")),
            ..custom
        };
        let (shell, cert) = expand(&page).unwrap();
        assert_eq!(shell, "serve '/srv/my site'");
        assert!(cert.is_none(), "no {{cert}}: the client runs --insecure");
    }

    #[test]
    fn the_udp_table_is_read_by_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue\n\
                     \x20 12: 020012C6:20FB 00000000:0000 07 00000000:00000000\n\
                     \x20 13: 0100007F:0035 00000000:0000 07 00000000:00000000\n";
        assert!(udp_table_has_port(table, 8443));
        assert!(udp_table_has_port(table, 53));
        assert!(!udp_table_has_port(table, 443));
        assert!(!udp_table_has_port("", 443));
    }

    #[test]
    fn an_h3_only_server_is_ready_once_its_udp_socket_is_bound() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert!(udp_bound(std::process::id(), port));
        drop(socket);
        assert!(!udp_bound(std::process::id(), port));
        let dual_stack = UdpSocket::bind("[::]:0").unwrap();
        assert!(udp_bound(
            std::process::id(),
            dual_stack.local_addr().unwrap().port()
        ));
    }
}
