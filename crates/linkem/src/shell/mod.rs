//! The I/O shell: two namespaces joined through TUN devices, with one
//! forwarding thread driving the pure model of both directions; and, for
//! an edge topology, a third namespace joined to the server's through a
//! second pair of TUN devices and a second forwarding thread (the origin
//! leg).

mod forward;
mod gateway;
mod netns;
mod resolver;
mod tool;
mod tun;
mod userns;

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::config::LinkConfig;
use crate::env;
use crate::model::{Direction, DirectionConfig, LinkStats, LossModel, Pipe, RateSpec, Way};
use forward::{Clock, Forwarder, Lane, Snapshots};
use gateway::Gateway;
use netns::Namespace;
use resolver::ResolverFile;

/// The client's address (RFC 2544 benchmarking range).
const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The client's second address, for a handoff ([`EmulatedPath::add_client_address`]).
const SECOND_CLIENT_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 3);
/// The server's address.
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// The server namespace's address on the origin leg (the edge's end).
const EDGE_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 1);
/// The origin's address, at the far end of the origin leg.
const ORIGIN_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
/// The origin leg's subnet, which the client namespace cannot reach.
const ORIGIN_LEG_SUBNET: &str = "198.18.1.0/24";
/// The host part of the server's first extra address (198.18.0.10).
const FIRST_EXTRA_SERVER_HOST: u8 = 10;
/// How many extra addresses the server's /24 leaves room for.
const MAX_EXTRA_SERVER_IPS: u8 = 200;

/// How long [`EmulatedPath::stats`] waits for the forwarding thread.
const STATS_PATIENCE: Duration = Duration::from_millis(200);

/// A running emulated path. Dropping it (or [`EmulatedPath::shutdown`])
/// stops forwarding and removes its namespaces and their devices.
pub struct EmulatedPath {
    config: LinkConfig,
    /// See [`PathControl::rebind_nat`].
    nat_rebound: Arc<AtomicBool>,
    /// The link between the client and the server namespaces.
    client_leg: Leg,
    /// The name the origin namespace gets, reserved with the others.
    origin_name: String,
    /// Addresses the server has besides [`SERVER_IP`].
    extra_server_ips: Vec<Ipv4Addr>,
    /// Where the path leaves for this machine's network, once
    /// [`EmulatedPath::route_out`] made it.
    gateway: Option<Gateway>,
    /// The client namespace's `resolv.conf`, once
    /// [`EmulatedPath::set_client_resolver`] wrote it.
    client_resolver: Option<ResolverFile>,
    // Dropped after the threads are joined (fields drop in order).
    /// The origin leg and its namespace, once
    /// [`EmulatedPath::add_origin_leg`] made them.
    origin: Option<OriginLeg>,
    client: Namespace,
    server: Namespace,
}

/// The final statistics of every leg of a path, from
/// [`EmulatedPath::shutdown_legs`].
#[derive(Debug, Clone)]
pub struct PathStats {
    /// The client's path: up is client to server (edge), down the reverse.
    pub client_leg: LinkStats,
    /// The origin leg, when the path had one: up is edge to origin, down
    /// origin to edge.
    pub origin_leg: Option<LinkStats>,
}

/// One emulated link between two TUN devices: its forwarding thread, the
/// flag that stops it and the statistics it hands out.
struct Leg {
    seed: u64,
    snapshots: Arc<Snapshots>,
    stop: Arc<AtomicBool>,
    /// The forwarding thread, until stopped.
    thread: Option<JoinHandle<()>>,
    epoch: Instant,
}

/// The edge topology's second link, from the server namespace (the edge)
/// to the origin namespace. The server namespace's end of it, a TUN
/// device of its own, lives as long as the forwarding thread holds it.
struct OriginLeg {
    leg: Leg,
    namespace: Namespace,
}

impl EmulatedPath {
    /// Removes stale namespaces of dead h3lab processes, then builds the
    /// path and starts forwarding.
    pub fn start(config: LinkConfig) -> anyhow::Result<EmulatedPath> {
        validate(&config)?;
        let names = netns::fresh_names();
        let (client, server) = if nix::unistd::geteuid().is_root() {
            cleanup_stale().context("removing stale h3lab namespaces")?;
            (
                Namespace::create(&names.client, &CLIENT_IP.to_string())?,
                Namespace::create(&names.server, &SERVER_IP.to_string())?,
            )
        } else {
            let unprivileged = |name: &str, address: Ipv4Addr| {
                Namespace::create_unprivileged(name, &address.to_string())
                    .context("emulating a link without root")
            };
            (
                unprivileged(&names.client, CLIENT_IP)?,
                unprivileged(&names.server, SERVER_IP)?,
            )
        };
        let nat_rebound = Arc::new(AtomicBool::new(false));
        let client_leg = Leg::start(
            &config,
            client.tun().try_clone()?,
            server.tun().try_clone()?,
            nat_rebound.clone(),
            "linkem-forward",
        )?;
        Ok(EmulatedPath {
            config,
            nat_rebound,
            client_leg,
            origin_name: names.origin,
            extra_server_ips: Vec::new(),
            gateway: None,
            client_resolver: None,
            origin: None,
            client,
            server,
        })
    }

    /// Adds the origin leg of an edge topology: a third namespace, the
    /// origin's, at 198.18.1.2 (returned), joined to the server namespace
    /// (then the edge, a reverse proxy, at 198.18.1.1 on that leg) by a
    /// link emulated like the client's path, with `config`'s RTT, rates,
    /// loss and seed (up is edge to origin). The client namespace cannot
    /// reach the origin, even when [routed out](EmulatedPath::route_out):
    /// only the edge, at layer 7, connects the two legs. Commands learn
    /// the address from `H3LAB_ORIGIN_IP`; start the origin with
    /// [`EmulatedPath::spawn_in_origin`] or `Placement::origin_command`.
    /// Once per path. Needs root.
    pub fn add_origin_leg(&mut self, config: LinkConfig) -> anyhow::Result<Ipv4Addr> {
        self.ensure_named("adding an origin leg")?;
        anyhow::ensure!(
            self.origin.is_none(),
            "this path already has an origin leg (the origin is at {ORIGIN_IP}); a path has at most one"
        );
        validate(&config).context("the origin leg's link")?;
        let namespace = Namespace::create(&self.origin_name, &ORIGIN_IP.to_string())?;
        let edge_tun = self
            .server
            .add_tun(netns::ORIGIN_LEG_DEVICE, &EDGE_IP.to_string())?;
        netns::block_route(self.client.name(), ORIGIN_LEG_SUBNET)
            .context("keeping the client namespace from reaching the origin")?;
        let leg = Leg::start(
            &config,
            edge_tun,
            namespace.tun().try_clone()?,
            // No NAT on the origin leg: nothing ever sets it.
            Arc::new(AtomicBool::new(false)),
            "linkem-origin",
        )?;
        self.origin = Some(OriginLeg { leg, namespace });
        Ok(ORIGIN_IP)
    }

    /// The configuration the path was started with.
    pub(crate) fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The client's address inside the client namespace (198.18.0.1).
    pub fn client_ip(&self) -> Ipv4Addr {
        CLIENT_IP
    }

    /// The server's address inside the server namespace (198.18.0.2).
    pub fn server_ip(&self) -> Ipv4Addr {
        SERVER_IP
    }

    /// The origin's address inside the origin namespace (198.18.1.2), once
    /// [`EmulatedPath::add_origin_leg`] made it.
    pub fn origin_ip(&self) -> Option<Ipv4Addr> {
        self.origin.as_ref().map(|_| ORIGIN_IP)
    }

    /// Gives the client a second address, 198.18.0.3, in the same subnet
    /// (the server's replies reach it through the same device), as when a
    /// phone joins a second network. Removing the first address later
    /// ([`PathControl::remove_client_address`]) leaves the second one
    /// and its route in place. Needs root.
    pub fn add_client_address(&self) -> anyhow::Result<Ipv4Addr> {
        self.ensure_named("changing the client's addresses")?;
        netns::promote_secondaries(self.client.handle())?;
        netns::change_address(self.client.name(), "add", &SECOND_CLIENT_IP.to_string())?;
        Ok(SECOND_CLIENT_IP)
    }

    /// Gives the server `count` more addresses in its subnet, 198.18.0.10
    /// on, so each origin of a replayed page is a host of its own, as on
    /// the web. Commands then learn them from `H3LAB_SERVER_IPS`
    /// (comma-separated, in order). Needs root.
    pub fn add_server_addresses(&mut self, count: usize) -> anyhow::Result<Vec<Ipv4Addr>> {
        self.ensure_named("giving the server more addresses")?;
        anyhow::ensure!(
            count <= MAX_EXTRA_SERVER_IPS as usize,
            "at most {MAX_EXTRA_SERVER_IPS} more server addresses; a page with more origins than that is not supported"
        );
        for i in 0..count as u8 {
            let address = Ipv4Addr::new(198, 18, 0, FIRST_EXTRA_SERVER_HOST + i);
            netns::change_address(self.server.name(), "add", &address.to_string())?;
            self.extra_server_ips.push(address);
        }
        Ok(self.extra_server_ips.clone())
    }

    /// Makes the path lead out to this machine's own network, as
    /// Mahimahi's shells do: the client namespace's traffic to any
    /// address beyond the path crosses the emulated link, then leaves the
    /// server namespace through NAT to whatever this machine reaches. A
    /// real server is then measured behind the emulated conditions. Needs
    /// root and iptables; everything it adds is removed with the path.
    pub fn route_out(&mut self) -> anyhow::Result<()> {
        self.ensure_named("taking the path out to this machine's network")?;
        if self.gateway.is_none() {
            self.gateway = Some(Gateway::open(&self.client, &self.server)?);
        }
        Ok(())
    }

    /// Starts every TCP connection on both sides of the path with a
    /// congestion window and a receive window of `segments` (the routes'
    /// `initcwnd` and `initrwnd`), where Linux starts at 10. `ip` runs
    /// inside each namespace, so a path made without root can do it too.
    pub fn set_tcp_initial_window(&self, segments: u32) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=1024).contains(&segments),
            "a TCP initial window of {segments} segments is out of range (1 to 1024)"
        );
        for (namespace, address) in [(&self.client, CLIENT_IP), (&self.server, SERVER_IP)] {
            let mut ip = self.command_in(namespace, "ip");
            ip.args(netns::initial_window_route(&address.to_string(), segments));
            netns::run_ip(&mut ip, None)?;
        }
        Ok(())
    }

    /// Points the client namespace's resolver at the DNS server at
    /// `nameserver` (port 53), as a network's DHCP would: commands started
    /// in the client namespace from now on, and programs run there with
    /// `ip netns exec`, read it from `/etc/resolv.conf`. Threads of this
    /// process in the namespace do not: give them the address. The file
    /// goes with the path. Needs root.
    pub fn set_client_resolver(&mut self, nameserver: Ipv4Addr) -> anyhow::Result<()> {
        self.ensure_named("giving the client namespace a DNS resolver")?;
        let system_file = resolver::RESOLV_CONF.to_string_lossy();
        anyhow::ensure!(
            std::path::Path::new(system_file.as_ref()).exists(),
            "this machine has no {system_file} for the client's resolver to be mounted over; create one (it may be empty)"
        );
        // The old file goes first: dropped after the new one is written,
        // it would remove it (they have the same path).
        self.client_resolver = None;
        self.client_resolver = Some(ResolverFile::write(self.client.name(), nameserver)?);
        Ok(())
    }

    /// A handle that changes the path while it runs, from any thread.
    /// Needs root.
    pub fn control(&self) -> anyhow::Result<PathControl> {
        self.ensure_named("changing the path while it runs")?;
        Ok(PathControl {
            client_namespace: self.client.name().to_string(),
            nat_rebound: self.nat_rebound.clone(),
        })
    }

    fn ensure_named(&self, what: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.client.user().is_none(),
            "{what} needs root (the namespaces were made without it); run it with sudo"
        );
        Ok(())
    }

    /// Names of the (client, server) namespaces, for `ip netns exec`.
    pub fn namespace_names(&self) -> (&str, &str) {
        (self.client.name(), self.server.name())
    }

    /// Name of the origin namespace, once [`EmulatedPath::add_origin_leg`]
    /// made it.
    pub fn origin_namespace_name(&self) -> Option<&str> {
        self.origin.as_ref().map(|origin| origin.namespace.name())
    }

    /// A command that runs inside the client namespace, with
    /// `H3LAB_SERVER_IP` and `H3LAB_CLIENT_IP` set (and `H3LAB_ORIGIN_IP`
    /// once there is an origin leg), and the namespace's resolver mounted
    /// over `/etc/resolv.conf` when it has one.
    pub(crate) fn client_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = self.command_in(&self.client, program);
        if let Some(resolver) = &self.client_resolver {
            let file = resolver.c_path().to_owned();
            // SAFETY: runs after the namespace is entered (pre_exec
            // closures run in order); mount_over_resolv_conf makes only
            // unshare(2) and mount(2) calls, on a string made before fork.
            unsafe {
                command.pre_exec(move || resolver::mount_over_resolv_conf(&file));
            }
        }
        command
    }

    /// A command that runs inside the server namespace.
    pub(crate) fn server_command(&self, program: impl AsRef<OsStr>) -> Command {
        self.command_in(&self.server, program)
    }

    /// A command that runs inside the origin namespace, with the same
    /// variables as the others; an error when the path has no origin leg.
    pub(crate) fn origin_command(&self, program: impl AsRef<OsStr>) -> anyhow::Result<Command> {
        Ok(self.command_in(self.origin_namespace()?, program))
    }

    fn origin_namespace(&self) -> anyhow::Result<&Namespace> {
        match &self.origin {
            Some(origin) => Ok(&origin.namespace),
            None => anyhow::bail!(
                "this path has no origin leg: add one with `EmulatedPath::add_origin_leg` first"
            ),
        }
    }

    fn command_in(&self, namespace: &Namespace, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env(env::SERVER_IP, SERVER_IP.to_string())
            .env(env::CLIENT_IP, CLIENT_IP.to_string());
        if let Some(origin) = self.origin_ip() {
            command.env(env::ORIGIN_IP, origin.to_string());
        }
        if !self.extra_server_ips.is_empty() {
            let ips: Vec<String> = self
                .extra_server_ips
                .iter()
                .map(Ipv4Addr::to_string)
                .collect();
            command.env(env::SERVER_IPS, ips.join(","));
        }
        let net = namespace.handle().as_raw_fd();
        let user = namespace.user().map(|user| user.as_raw_fd());
        // SAFETY: the closure only calls setns(2), which is async-signal-
        // safe; the descriptors stay open while `self` lives, and are
        // inherited by the forked child before exec.
        unsafe {
            command.pre_exec(move || match user {
                Some(user) => userns::enter(user, net),
                None if libc::setns(net, libc::CLONE_NEWNET) != 0 => {
                    Err(std::io::Error::last_os_error())
                }
                None => Ok(()),
            });
        }
        command
    }

    /// Runs `work` on a new thread inside the client namespace (sockets it
    /// opens live there).
    pub fn spawn_in_client<T, F>(&self, work: F) -> anyhow::Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        spawn_in(&self.client, work)
    }

    /// Runs `work` on a new thread inside the server namespace.
    pub fn spawn_in_server<T, F>(&self, work: F) -> anyhow::Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        spawn_in(&self.server, work)
    }

    /// Runs `work` on a new thread inside the origin namespace; an error
    /// when the path has no origin leg.
    pub fn spawn_in_origin<T, F>(&self, work: F) -> anyhow::Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        spawn_in(self.origin_namespace()?, work)
    }

    /// The client path's statistics so far, copied by the forwarding
    /// thread on request (it answers within about 10 ms); after
    /// [`EmulatedPath::shutdown`], the final ones.
    pub(crate) fn stats(&self) -> LinkStats {
        self.client_leg.stats()
    }

    /// The origin leg's statistics so far (up is edge to origin), as
    /// [`EmulatedPath::shutdown_legs`] gives them at the end; `None`
    /// without an origin leg. Asking pauses that leg's forwarding while
    /// its thread copies them: read them at the end of a measurement.
    pub fn origin_stats(&self) -> Option<LinkStats> {
        self.origin.as_ref().map(|origin| origin.leg.stats())
    }

    /// CPU seconds the client path's forwarding thread has used so far,
    /// read from its CPU clock without asking it: a statistics snapshot
    /// would pause forwarding while it copies the histograms, and make
    /// packets late.
    pub fn forwarder_cpu_s(&self) -> f64 {
        self.client_leg.cpu_s()
    }

    /// The same for the origin leg's forwarding thread, a thread of its
    /// own; `None` without an origin leg.
    pub fn origin_forwarder_cpu_s(&self) -> Option<f64> {
        self.origin.as_ref().map(|origin| origin.leg.cpu_s())
    }

    /// Stops forwarding, removes the namespaces and returns the client
    /// path's final stats (the origin leg's: [`EmulatedPath::shutdown_legs`]).
    pub fn shutdown(self) -> anyhow::Result<LinkStats> {
        Ok(self.shutdown_legs()?.client_leg)
    }

    /// Stops forwarding on every leg, removes the namespaces and returns
    /// each leg's final stats.
    pub fn shutdown_legs(mut self) -> anyhow::Result<PathStats> {
        self.stop_forwarding();
        Ok(PathStats {
            client_leg: self.stats(),
            origin_leg: self.origin_stats(),
        })
    }

    /// Stops and joins the forwarding threads, which leave their final
    /// statistics (if one panicked, its last copy stays).
    fn stop_forwarding(&mut self) {
        self.client_leg.stop();
        if let Some(origin) = &mut self.origin {
            origin.leg.stop();
        }
    }
}

impl Leg {
    /// Starts a thread forwarding between `near` and `far` through
    /// `config`'s model: up from `near` to `far`, down the other way.
    fn start(
        config: &LinkConfig,
        near: OwnedFd,
        far: OwnedFd,
        nat_rebound: Arc<AtomicBool>,
        thread_name: &str,
    ) -> anyhow::Result<Leg> {
        let (near, far) = (Arc::new(near), Arc::new(far));
        let epoch = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let snapshots = Arc::new(Snapshots::default());
        let lane = |from: &Arc<OwnedFd>, to: &Arc<OwnedFd>, settings, way| {
            Lane::new(
                from.clone(),
                to.clone(),
                Pipe::new(Direction::new(settings, config.seed, way)),
                way,
                nat_rebound.clone(),
            )
        };
        let forwarder = Forwarder {
            lanes: [
                lane(&near, &far, &config.up, Way::Up),
                lane(&far, &near, &config.down, Way::Down),
            ],
            snapshots: snapshots.clone(),
            clock: Clock(epoch),
            stop: stop.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(thread_name.into())
            .spawn(move || forwarder.run())?;
        Ok(Leg {
            seed: config.seed,
            snapshots,
            stop,
            thread: Some(thread),
            epoch,
        })
    }

    /// The statistics so far (asking the thread), or the final ones once
    /// it stopped.
    fn stats(&self) -> LinkStats {
        let snapshot = match self.thread {
            Some(_) => self.snapshots.request(STATS_PATIENCE),
            None => self.snapshots.latest(),
        };
        LinkStats {
            up: snapshot.up,
            down: snapshot.down,
            forwarder_cpu_s: snapshot.cpu_s,
            seed: self.seed,
            elapsed_s: self.epoch.elapsed().as_secs_f64(),
        }
    }

    /// The thread's CPU seconds, from its CPU clock while it runs.
    fn cpu_s(&self) -> f64 {
        match &self.thread {
            Some(thread) => thread_cpu_s(thread).unwrap_or(0.0),
            None => self.snapshots.latest().cpu_s,
        }
    }

    /// Stops and joins the thread.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the linkem forwarding thread panicked");
            }
        }
    }
}

impl Drop for EmulatedPath {
    fn drop(&mut self) {
        self.stop_forwarding();
    }
}

/// Removes what dead h3lab processes left behind: their namespaces (their
/// TUN devices died with them), their gateways' rules in this machine's
/// own namespace, and their namespaces' resolver files (`/etc/netns`).
/// Returns the namespaces removed.
pub fn cleanup_stale() -> anyhow::Result<Vec<String>> {
    let removed = netns::cleanup_stale()?;
    gateway::cleanup_stale(netns::is_alive)?;
    resolver::cleanup_stale(netns::is_alive)?;
    Ok(removed)
}

/// Changes to a running path: the events of a connection-migration test.
#[derive(Clone)]
pub struct PathControl {
    client_namespace: String,
    nat_rebound: Arc<AtomicBool>,
}

impl PathControl {
    /// The path's NAT rebinds: from now on every client flow leaves with a
    /// new external port, and packets to the old ports are dropped (see
    /// `model::nat`). TCP connections open now break; QUIC can migrate.
    pub fn rebind_nat(&self) {
        self.nat_rebound.store(true, Ordering::Relaxed);
    }

    /// Removes one of the client's addresses, as when a phone leaves a
    /// network: sockets bound to it can no longer send, and packets to it
    /// are dropped on arrival.
    pub fn remove_client_address(&self, address: Ipv4Addr) -> anyhow::Result<()> {
        netns::change_address(&self.client_namespace, "del", &address.to_string())
    }
}

/// CPU seconds of a running thread, from its POSIX CPU-time clock.
fn thread_cpu_s(thread: &JoinHandle<()>) -> Option<f64> {
    use std::os::unix::thread::JoinHandleExt;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the pthread is alive (joined only on stop, which needs
    // `&mut` of its leg), and `clock` is a valid out-pointer.
    if unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut clock) } != 0 {
        return None;
    }
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a clock id from pthread_getcpuclockid and a valid timespec.
    if unsafe { libc::clock_gettime(clock, &mut time) } != 0 {
        return None;
    }
    Some(time.tv_sec as f64 + time.tv_nsec as f64 / 1e9)
}

fn spawn_in<T, F>(namespace: &Namespace, work: F) -> anyhow::Result<JoinHandle<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    anyhow::ensure!(
        namespace.user().is_none(),
        "running work on a thread inside the emulated path needs root (a \
         multithreaded process cannot join a user namespace); run it with sudo, \
         or run a program there with `h3lab net run`"
    );
    let handle = namespace.handle().try_clone()?;
    let name = namespace.name().to_string();
    Ok(std::thread::Builder::new()
        .name(format!("in-{name}"))
        .spawn(move || {
            netns::enter(&handle).unwrap_or_else(|err| panic!("cannot enter {name}: {err}"));
            work()
        })?)
}

/// Rejects configurations built in code with values out of range (the
/// command-line parsers already reject them).
fn validate(config: &LinkConfig) -> anyhow::Result<()> {
    for (way, direction) in [("up", &config.up), ("down", &config.down)] {
        validate_direction(direction).with_context(|| format!("{way} direction"))?;
    }
    Ok(())
}

fn validate_direction(config: &DirectionConfig) -> anyhow::Result<()> {
    let probability = |what: &str, p: f64| {
        anyhow::ensure!(
            (0.0..=1.0).contains(&p),
            "{what} {p} is not a probability; give a value from 0 to 1 (0% to 100%)"
        );
        Ok(())
    };
    if let RateSpec::Fixed { bits_per_sec: 0 } = config.rate {
        anyhow::bail!("a rate of 0 bit/s carries nothing; give a positive rate such as `10mbit`");
    }
    match config.loss {
        LossModel::Bernoulli { p } => probability("loss", p)?,
        LossModel::Gilbert(ge) => {
            for (what, p) in [
                ("gilbert p", ge.p),
                ("gilbert r", ge.r),
                ("gilbert loss in good state", ge.loss_good),
                ("gilbert loss in bad state", ge.loss_bad),
            ] {
                probability(what, p)?;
            }
        }
    }
    probability("duplication", config.duplicate)?;
    if let Some(reorder) = config.reorder {
        probability("reordering", reorder.probability)?;
    }
    Ok(())
}
