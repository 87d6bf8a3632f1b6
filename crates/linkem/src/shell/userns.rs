//! Namespaces without root: a user namespace owning a network namespace,
//! made by a short-lived child process that maps the caller's uid and gid
//! to root inside, creates the TUN device there and hands back descriptors
//! of both namespaces and the device. Nothing is named, so nothing can be
//! left behind: the namespaces vanish when their last descriptor closes,
//! at the latest when this process dies.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use super::tun::{self, InterfaceRequest};

/// A user namespace, the network namespace it owns, and a TUN device in it.
pub struct Handles {
    pub user: OwnedFd,
    pub net: OwnedFd,
    pub tun: OwnedFd,
}

/// Descriptors the child sends: user namespace, network namespace, TUN.
const SENT_FDS: usize = 3;

/// Creates the namespaces and TUN device `device` in a child process.
pub fn create(device: &str) -> anyhow::Result<Handles> {
    let (ours, theirs) = UnixStream::pair()?;
    // Everything the child needs is prepared here: after fork, a child of
    // a multithreaded process may only make plain system calls.
    let uid_map = format!("0 {} 1", nix::unistd::geteuid());
    let gid_map = format!("0 {} 1", nix::unistd::getegid());
    let disable_ipv6 = CString::new(format!("/proc/sys/net/ipv6/conf/{device}/disable_ipv6"))?;
    let request = InterfaceRequest::tun(device)?;
    let socket = theirs.as_raw_fd();
    let mut child = Command::new("true");
    child.stdin(Stdio::null()).stdout(Stdio::null());
    // SAFETY: the closure makes only async-signal-safe system calls on
    // data prepared before the fork.
    unsafe {
        child.pre_exec(move || {
            let at = |step: Step| move |err: io::Error| step.report(socket, err);
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET))
                .map_err(at(Step::Unshare))?;
            write_file(c"/proc/self/setgroups", b"deny").map_err(at(Step::MapIds))?;
            write_file(c"/proc/self/uid_map", uid_map.as_bytes()).map_err(at(Step::MapIds))?;
            write_file(c"/proc/self/gid_map", gid_map.as_bytes()).map_err(at(Step::MapIds))?;
            let tun = tun::open_raw(&request).map_err(at(Step::OpenTun))?;
            // Best effort, as for root: router solicitations and MLD
            // reports must not cross the link.
            let _ = write_file(&disable_ipv6, b"1");
            let user = open_read(c"/proc/self/ns/user").map_err(at(Step::PassBack))?;
            let net = open_read(c"/proc/self/ns/net").map_err(at(Step::PassBack))?;
            send_fds(socket, [user.as_raw_fd(), net.as_raw_fd(), tun.as_raw_fd()])
                .map_err(at(Step::PassBack))
        });
    }
    let status = match child.status() {
        Ok(status) => status,
        Err(err) => return Err(Step::failed(&ours, err)),
    };
    anyhow::ensure!(status.success(), "the namespace helper failed: {status}");
    drop(theirs);
    let [user, net, tun] = receive_fds(&ours)?;
    Ok(Handles { user, net, tun })
}

/// The helper's steps, so a failure names the one that failed and its fix.
#[derive(Clone, Copy)]
enum Step {
    Unshare = 1,
    MapIds,
    OpenTun,
    PassBack,
}

impl Step {
    /// In the forked child: tells the parent which step failed.
    fn report(self, socket: RawFd, err: io::Error) -> io::Error {
        let byte = self as u8;
        // SAFETY: a one-byte write from a live buffer; failure only loses detail.
        unsafe { libc::write(socket, (&byte as *const u8).cast(), 1) };
        err
    }

    /// In the parent: the child's error, explained by the step it reported.
    fn failed(socket: &UnixStream, err: io::Error) -> anyhow::Error {
        let mut byte = [0u8; 1];
        let reported = socket.set_nonblocking(true).is_ok()
            && io::Read::read(&mut &*socket, &mut byte).is_ok_and(|n| n == 1);
        let step = [Step::Unshare, Step::MapIds, Step::OpenTun, Step::PassBack]
            .into_iter()
            .find(|step| reported && *step as u8 == byte[0]);
        let uid = nix::unistd::geteuid();
        match step {
            Some(Step::Unshare) => anyhow::anyhow!(
                "cannot create an unprivileged user namespace: {err}; enable them \
                 (sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1) \
                 or run as root"
            ),
            Some(Step::MapIds) => anyhow::anyhow!(
                "the user namespace was created, but mapping uid {uid} to root inside it failed: \
                 {err}; run as root"
            ),
            Some(Step::OpenTun) => anyhow::anyhow!(
                "the user namespace was created, but opening /dev/net/tun inside it failed: \
                 {err}; {}",
                tun_fix()
            ),
            Some(Step::PassBack) | None => {
                anyhow::anyhow!("the namespace helper could not hand back its namespaces: {err}")
            }
        }
    }
}

/// What lets an unprivileged user open the TUN device.
fn tun_fix() -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata("/dev/net/tun") {
        Ok(meta) if meta.permissions().mode() & 0o006 != 0o006 => format!(
            "/dev/net/tun is mode {:o}, which only its owner may open: \
             `chmod 0666 /dev/net/tun` (most distributions' default), or run as root",
            meta.permissions().mode() & 0o777
        ),
        Ok(_) => "run as root".to_string(),
        Err(err) => format!("/dev/net/tun: {err}; load the module (`modprobe tun`) or run as root"),
    }
}

/// Enters the user namespace, then the network namespace: for a forked
/// child before exec (a multithreaded process cannot change its user
/// namespace).
pub fn enter(user: RawFd, net: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on descriptors the caller keeps open.
    unsafe {
        check(libc::setns(user, libc::CLONE_NEWUSER))?;
        check(libc::setns(net, libc::CLONE_NEWNET))?;
    }
    Ok(())
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn open_read(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(fd)?;
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the slice is valid for its length.
    let written = unsafe { libc::write(file.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if written != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Room for one SCM_RIGHTS message with [`SENT_FDS`] descriptors.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

fn send_fds(socket: RawFd, fds: [RawFd; SENT_FDS]) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = ControlBuffer([0; 64]);
    let payload = std::mem::size_of_val(&fds) as u32;
    // SAFETY: the message points at live buffers; the control buffer is
    // aligned and larger than CMSG_SPACE of the payload.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(payload) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(payload) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast(), SENT_FDS);
        if libc::sendmsg(socket, &message, 0) != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn receive_fds(socket: &UnixStream) -> anyhow::Result<[OwnedFd; SENT_FDS]> {
    socket.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = ControlBuffer([0; 64]);
    let mut fds: [RawFd; SENT_FDS] = [-1; SENT_FDS];
    // SAFETY: the message points at live buffers; the kernel fills at most
    // `msg_controllen` bytes, and only a full SCM_RIGHTS header is read.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = control.0.len() as _;
        let received = libc::recvmsg(socket.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC);
        if received != 1 {
            let err = io::Error::last_os_error();
            return Err(err).context("the namespace helper sent no descriptors");
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        let expected = libc::CMSG_LEN(std::mem::size_of_val(&fds) as u32) as usize;
        anyhow::ensure!(
            !header.is_null()
                && (*header).cmsg_type == libc::SCM_RIGHTS
                && (*header).cmsg_len as usize == expected,
            "the namespace helper sent a malformed message"
        );
        std::ptr::copy_nonoverlapping(
            libc::CMSG_DATA(header).cast::<RawFd>(),
            fds.as_mut_ptr(),
            SENT_FDS,
        );
        Ok(fds.map(|fd| OwnedFd::from_raw_fd(fd)))
    }
}
