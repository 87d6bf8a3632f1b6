//! Forwarding capacity of the emulated path (needs root):
//! `cargo bench -p linkem --bench capacity` (optimized build). Reports
//! packets/s forwarded and the forwarding thread's CPU time per packet, with
//! no rate limit (raw capacity) and through the `fast-1g` profile.

use std::time::Duration;

fn main() -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: the capacity benchmark needs root to create namespaces");
        return Ok(());
    }
    let unlimited = linkem::LinkSettings::default();
    let fast = linkem::profile("fast-1g")?
        .settings
        .expect("fast-1g is emulated");
    for (name, settings) in [("unlimited", unlimited), ("fast-1g", fast)] {
        let report = linkem::capacity::measure(&settings, Duration::from_secs(3))?;
        println!("{name}: {}", serde_json::to_string(&report)?);
    }
    Ok(())
}
