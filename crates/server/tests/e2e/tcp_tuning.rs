//! TCP settings take effect on the server's connections, read back from
//! the kernel with `ss` (iproute2).

use std::process::Command;

use h3lab_server::{Limits, TcpCongestion, TcpTuning};

use crate::common::{connect_tcp, tcp_tls, test_config, Proto};

#[tokio::test]
async fn the_chosen_congestion_controller_is_set_on_each_connection() {
    let config = h3lab_server::ServerConfig {
        tcp_tuning: TcpTuning {
            congestion: Some(TcpCongestion::Reno),
            ..TcpTuning::default()
        },
        ..test_config(None, Limits::default())
    };
    let server = h3lab_server::start(config).await.unwrap();
    let port = server.local_addr().port();
    let mut client = connect_tcp(server.local_addr(), tcp_tls(&server, Proto::H2), Proto::H2).await;
    assert_eq!(client.get("/bytes/10").await.body.len(), 10);
    let output = Command::new("ss")
        .args(["-tinH", "state", "established"])
        .arg(format!("( sport = :{port} )"))
        .output()
        .expect("ss (iproute2) runs");
    let sockets = String::from_utf8_lossy(&output.stdout);
    assert!(
        sockets.split_whitespace().any(|word| word == "reno"),
        "the server's socket uses reno: {sockets}"
    );
    drop(client);
    server.shutdown().await;
}
