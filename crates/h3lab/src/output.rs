//! Standard output that goes quiet when its reader does (`h3lab bench
//! --dry-run | head -1`), as ripgrep's does, instead of panicking as
//! `println!` does. The command runs on to its normal end, so what it has
//! to clean up (namespaces, servers, partial results) still is.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed: nothing more is printed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout unless it is closed; the first failure closes it. A
/// reader that went away (a broken pipe) is normal and says nothing; any
/// other failure is named once on stderr.
pub fn write(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(err) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if err.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("h3lab: cannot write to standard output ({err}); printing nothing more");
        }
    }
}
