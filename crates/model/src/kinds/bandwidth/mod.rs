//! The bandwidth test's plain data (iperf3's test, and `pps`): what it is asked to do
//! ([`BandwidthSpec`]), the mergeable [`Figures`] its streams count and the finished run
//! ([`BandwidthReport`]).

mod figures;
mod report;
mod spec;

pub use figures::{Figures, SideDelta, TcpSample, Totals};
pub use report::{
    BandwidthInterval, BandwidthReport, BandwidthSummary, CpuUsage, FlowFigures, FlowSummary,
    StreamFigures,
};
pub use spec::{
    BandwidthSpec, Direction, End, Flow, DEFAULT_TCP_LENGTH, DEFAULT_UDP_BITRATE,
    DEFAULT_UDP_LENGTH, MAX_TCP_LENGTH, MAX_UDP_LENGTH, MIN_UDP_LENGTH,
};
