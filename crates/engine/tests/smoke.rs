//! Quick loopback run used while developing the engine.
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::bandwidth::client::{run, ClientOptions};
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_model::spec::{BandwidthSpec, Protocol};
use wirespeed_model::ReportBody;

#[tokio::test(flavor = "multi_thread")]
async fn smoke() {
    let l = Listeners::bind(&["127.0.0.1:0".parse().unwrap()]).unwrap();
    let port = l.local_addrs()[0].port();
    let stop = CancellationToken::new();
    let srv = tokio::spawn(server::run(l, ServerConfig::default(), stop.clone()));
    for proto in [Protocol::Tcp, Protocol::Udp] {
        let mut spec = BandwidthSpec::new("127.0.0.1", proto);
        spec.duration_ns = 2_000_000_000;
        spec.bitrate_bps = 0;
        let opts = ClientOptions {
            spec,
            host: "127.0.0.1".into(),
            port,
            family: None,
            bind: None,
            token: None,
            connect_timeout: Duration::from_secs(2),
            version: "t".into(),
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let r = run(opts, tx, CancellationToken::new()).await.unwrap();
        let ReportBody::Bandwidth(b) = &r.body;
        println!("{}", serde_json::to_string_pretty(&b.summary).unwrap());
        println!("intervals {}", b.intervals.len());
    }
    stop.cancel();
    srv.await.unwrap().unwrap();
}
