//! Trace to loopback: one hop, the destination itself, with every probe protocol on both
//! families. (Multi-hop paths through namespaces are tested with the binary, in
//! crates/wirespeed/tests/it/trace.rs.)

use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::trace::client::{self, TraceOptions};
use wirespeed_model::kinds::trace::{TraceProtocol, TraceSpec};
use wirespeed_model::ReportBody;
use wirespeed_testkit::ports::free_port;

use crate::common::endpoint;

#[tokio::test(flavor = "multi_thread")]
async fn loopback_is_one_hop_for_every_protocol() {
    for ip in ["127.0.0.1", "::1"] {
        for protocol in [TraceProtocol::Icmp, TraceProtocol::Udp, TraceProtocol::Tcp] {
            let mut spec = TraceSpec::new(ip, protocol);
            spec.rounds = Some(2);
            spec.max_hops = 5;
            if protocol == TraceProtocol::Tcp {
                spec.port = free_port(); // closed: the RST is the destination's answer
            }
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let opts =
                TraceOptions { spec, endpoint: endpoint(SocketAddr::new(ip.parse().unwrap(), 0)) };
            let report = match client::run(opts, tx, CancellationToken::new()).await {
                Ok(r) => r,
                Err(e) if e.to_string().contains("CAP_NET_RAW") => {
                    wirespeed_testkit::skip::missing(
                        &e.to_string(),
                        "run as root or with CAP_NET_RAW",
                    );
                    return;
                }
                Err(e) => panic!("{ip} {protocol:?}: {e}"),
            };
            let ReportBody::Trace(t) = report.body else { panic!("not a trace") };
            let what = format!("{ip} {protocol:?}");
            assert!(t.summary.reached, "{what}");
            assert_eq!(t.summary.rounds, 2);
            assert_eq!(t.summary.hops.len(), 1, "{what}: {:?}", t.summary.hops);
            let hop = &t.summary.hops[0];
            assert_eq!((hop.sent, hop.received), (2, 2), "{what}");
            assert_eq!(hop.addresses, vec![ip.parse::<std::net::IpAddr>().unwrap().to_string()]);
            assert!(hop.reached && hop.note.is_none(), "{what}: {hop:?}");
            assert_eq!(hop.rtt.count, 2);
        }
    }
}
