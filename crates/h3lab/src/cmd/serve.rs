//! `h3lab serve`: run the dual-stack reference server until SIGINT or SIGTERM.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use h3lab_server::cli::ServeArgs;
use h3lab_server::RunningServer;
use tokio::signal::unix::{signal, SignalKind};

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        builder.worker_threads(threads.into());
    }
    let runtime = builder
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> Result<ExitCode> {
    let write_cert = args.write_cert.clone();
    let start_report = args.start_report.clone();
    let config = args.server_config();
    let server = h3lab_server::start(config).await?;
    if let (Some(path), Some(pem)) = (&write_cert, server.cert_pem()) {
        std::fs::write(path, pem).with_context(|| {
            format!(
                "cannot write the certificate to {}; pass a writable --write-cert path",
                path.display()
            )
        })?;
    }
    if let Some(path) = &start_report {
        write_start_report(&server, path)?;
    }
    print_banner(&server)?;
    wait_for_stop_signal().await?;
    eprintln!("shutting down: finishing in-flight requests");
    let summary = server.shutdown().await;
    outln!("{summary}");
    Ok(ExitCode::SUCCESS)
}

fn write_start_report(server: &RunningServer, path: &std::path::Path) -> Result<()> {
    let text = serde_json::to_string(&server.start_report())?;
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write the start report to {}; pass a writable --start-report path",
            path.display()
        )
    })
}

fn print_banner(server: &RunningServer) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    for line in server.banner() {
        writeln!(stdout, "{line}")?;
    }
    stdout.flush()?;
    Ok(())
}

async fn wait_for_stop_signal() -> Result<()> {
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    Ok(())
}
