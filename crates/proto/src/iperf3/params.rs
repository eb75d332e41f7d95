//! The parameter document an iperf3 client sends after PARAM_EXCHANGE: read with every field's
//! type and range checked (iperf3's own server trusted both until CVE-2024-53580), written for
//! our iperf3-compatible client, and mapped to and from a [`BandwidthSpec`].

use serde_json::{Map, Value};
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction};
use wirespeed_model::rules::{Protocol, MAX_PARALLEL};

use super::wire::errno;

/// iperf3's default UDP rate when `-b` is not given: 1 Mibit/s.
pub const IPERF3_DEFAULT_UDP_BITRATE: u64 = 1024 * 1024;

/// What an iperf3 client asked for. Options iperf3 has and we do not act on (`server_affinity`,
/// `fqrate`, `pacing_timer`, `burst`, `flowlabel`, `title`, `extra_data`, `repeating_payload`,
/// `dont_fragment`, `skip_rx_copy`) are type-checked and otherwise ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// TCP or UDP (SCTP is refused).
    pub protocol: Protocol,
    /// Seconds of warm-up left out of the results.
    pub omit_s: u32,
    /// Test length in seconds; 0 when `num` or `blockcount` ends the test.
    pub time_s: u32,
    /// Bytes to send (`-n`), 0 when unset.
    pub num: u64,
    /// Blocks to send (`-k`), 0 when unset.
    pub blockcount: u64,
    /// TCP MSS (`-M`), if set.
    pub mss: Option<u32>,
    /// `-N`.
    pub nodelay: bool,
    /// Streams per direction (`-P`).
    pub parallel: u16,
    /// `-R`.
    pub reverse: bool,
    /// `--bidir`.
    pub bidirectional: bool,
    /// Socket buffer size (`-w`), if set.
    pub window: Option<u32>,
    /// Block (TCP write) or datagram size (`-l`).
    pub len: u32,
    /// Rate per stream in bit/s (`-b`), 0 = unlimited.
    pub bandwidth: u64,
    /// IP TOS byte (`-S`, `--dscp` × 4), if set.
    pub tos: Option<u8>,
    /// Congestion control (`-C`), if set.
    pub congestion: Option<String>,
    /// `--get-server-output`.
    pub get_server_output: bool,
    /// `--udp-counters-64bit`.
    pub udp_counters_64bit: bool,
    /// `-Z`.
    pub zerocopy: bool,
    /// True when the client sent an RSA `authtoken` (we cannot check those).
    pub has_authtoken: bool,
    /// The client's version string, if sent.
    pub client_version: Option<String>,
}

/// Why a parameter document was refused: the iperf3 error number to answer with, and our words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// `i_errno` for the SERVER_ERROR answer.
    pub errno: i32,
    /// What was wrong, for our log.
    pub message: String,
}

fn refuse(errno: i32, message: impl Into<String>) -> ParamError {
    ParamError { errno, message: message.into() }
}

/// Typed field access that refuses wrong types instead of coercing them.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn number(&self, key: &str, max: f64) -> Result<Option<f64>, ParamError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(f64::NAN);
                if !(0.0..=max).contains(&v) || v.fract() != 0.0 {
                    return Err(refuse(
                        errno::RECV_PARAMS,
                        format!("'{key}' = {n} is out of range 0..={max}"),
                    ));
                }
                Ok(Some(v))
            }
            Some(other) => Err(wrong_type(key, "a number", other)),
        }
    }

    fn flag(&self, key: &str) -> Result<bool, ParamError> {
        match self.0.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong_type(key, "true", other)),
        }
    }

    /// A flag iperf3 sends as a number (1 when set).
    fn numeric_flag(&self, key: &str) -> Result<bool, ParamError> {
        Ok(self.number(key, u32::MAX.into())?.is_some_and(|v| v != 0.0))
    }

    fn string(&self, key: &str, max_len: usize) -> Result<Option<String>, ParamError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.len() <= max_len => Ok(Some(s.clone())),
            Some(Value::String(_)) => {
                Err(refuse(errno::RECV_PARAMS, format!("'{key}' is longer than {max_len} bytes")))
            }
            Some(other) => Err(wrong_type(key, "a string", other)),
        }
    }
}

fn wrong_type(key: &str, want: &str, got: &Value) -> ParamError {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    refuse(errno::RECV_PARAMS, format!("'{key}' must be {want}, got {kind}"))
}

impl Params {
    /// Reads a parameter document, checking the type of every field we know and the range of
    /// every number.
    pub fn from_json(map: &Map<String, Value>) -> Result<Self, ParamError> {
        let f = Fields(map);
        let protocol = match (f.flag("tcp")?, f.flag("udp")?, f.flag("sctp")?) {
            (true, false, false) => Protocol::Tcp,
            (false, true, false) => Protocol::Udp,
            (false, false, true) => return Err(refuse(errno::PROTOCOL, "SCTP is not supported")),
            _ => return Err(refuse(errno::RECV_PARAMS, "exactly one of tcp/udp must be true")),
        };
        // Type checks for the options we accept and ignore.
        for key in ["server_affinity", "fqrate", "pacing_timer", "burst", "flowlabel"] {
            f.number(key, u64::MAX as f64)?;
        }
        for key in ["repeating_payload", "dont_fragment", "skip_rx_copy"] {
            f.numeric_flag(key)?;
        }
        for key in ["title", "extra_data", "congestion_used"] {
            f.string(key, 4096)?;
        }
        f.flag("mptcp")?;
        let parallel = f.number("parallel", MAX_PARALLEL.into())?.unwrap_or(1.0) as u16;
        if parallel == 0 {
            return Err(refuse(errno::NUM_STREAMS, "parallel must be at least 1"));
        }
        let tos = f.number("TOS", 255.0)?.map(|v| v as u8);
        Ok(Self {
            protocol,
            omit_s: f.number("omit", 600.0)?.unwrap_or(0.0) as u32,
            time_s: f.number("time", 86_400.0)?.unwrap_or(0.0) as u32,
            num: f.number("num", 2f64.powi(53))?.unwrap_or(0.0) as u64,
            blockcount: f.number("blockcount", 2f64.powi(53))?.unwrap_or(0.0) as u64,
            mss: f.number("MSS", 32_767.0)?.map(|v| v as u32).filter(|&m| m != 0),
            nodelay: f.flag("nodelay")?,
            parallel,
            reverse: f.flag("reverse")?,
            bidirectional: f.flag("bidirectional")?,
            window: f
                .number("window", (512u32 * 1024 * 1024).into())?
                .map(|v| v as u32)
                .filter(|&w| w != 0),
            len: f.number("len", (16u32 * 1024 * 1024).into())?.map(|v| v as u32).unwrap_or(0),
            bandwidth: f.number("bandwidth", 2f64.powi(53))?.unwrap_or(0.0) as u64,
            tos,
            congestion: f.string("congestion", 15)?,
            get_server_output: f.numeric_flag("get_server_output")?,
            udp_counters_64bit: f.numeric_flag("udp_counters_64bit")?,
            zerocopy: f.numeric_flag("zerocopy")?,
            has_authtoken: f.string("authtoken", 8192)?.is_some(),
            client_version: f.string("client_version", 64)?,
        })
    }

    /// The document our iperf3-compatible client sends, as iperf3 3.x writes it.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        match self.protocol {
            Protocol::Tcp => put("tcp", true.into()),
            Protocol::Udp => put("udp", true.into()),
            // iperf3 has no QUIC; our iperf3 client refuses a QUIC test before it gets here.
            Protocol::Quic => {}
        }
        put("omit", self.omit_s.into());
        put("time", self.time_s.into());
        put("num", self.num.into());
        put("blockcount", self.blockcount.into());
        if let Some(mss) = self.mss {
            put("MSS", mss.into());
        }
        if self.nodelay {
            put("nodelay", true.into());
        }
        put("parallel", self.parallel.into());
        if self.reverse {
            put("reverse", true.into());
        }
        if self.bidirectional {
            put("bidirectional", true.into());
        }
        if let Some(w) = self.window {
            put("window", w.into());
        }
        put("len", self.len.into());
        if self.bandwidth > 0 {
            put("bandwidth", self.bandwidth.into());
        }
        if let Some(tos) = self.tos {
            put("TOS", tos.into());
        }
        if let Some(cc) = &self.congestion {
            put("congestion", cc.clone().into());
        }
        if self.get_server_output {
            put("get_server_output", 1.into());
        }
        if self.udp_counters_64bit {
            put("udp_counters_64bit", 1.into());
        }
        if self.zerocopy {
            put("zerocopy", 1.into());
        }
        if let Some(v) = &self.client_version {
            put("client_version", v.clone().into());
        }
        Value::Object(m)
    }

    /// The test these parameters describe, as a spec our engine runs; refusals carry the
    /// iperf3 error number a stock server would send.
    pub fn to_spec(&self, target: &str) -> Result<BandwidthSpec, ParamError> {
        let mut spec = BandwidthSpec::new(target, self.protocol);
        spec.parallel = self.parallel;
        spec.direction = match (self.reverse, self.bidirectional) {
            (false, false) => Direction::Upload,
            (true, false) => Direction::Download,
            (false, true) => Direction::Bidir,
            (true, true) => {
                return Err(refuse(errno::RECV_PARAMS, "reverse and bidirectional together"))
            }
        };
        if self.len != 0 {
            spec.length = self.len;
        }
        // iperf3 fills `bandwidth` for UDP even when -b is absent (1 Mibit/s), and leaves it
        // out for unlimited TCP.
        spec.bitrate_bps = self.bandwidth;
        spec.omit_ns = u64::from(self.omit_s) * 1_000_000_000;
        spec.duration_ns = u64::from(self.time_s) * 1_000_000_000;
        spec.bytes = match (self.num, self.blockcount) {
            (0, 0) => None,
            (0, k) => Some(k.saturating_mul(u64::from(spec.length))),
            (n, _) => Some(n),
        };
        spec.window = self.window;
        spec.congestion = self.congestion.clone();
        spec.mss = self.mss;
        spec.no_delay = self.nodelay;
        spec.dscp = self.tos.map(|t| t >> 2);
        spec.zerocopy = self.zerocopy && self.protocol == Protocol::Tcp;
        spec.validate().map_err(|e| {
            let code = match e.0.as_str() {
                m if m.starts_with("UDP length") => errno::UDP_BLOCK_SIZE,
                m if m.starts_with("TCP length") => errno::BLOCK_SIZE,
                m if m.starts_with("the window") => errno::BUF_SIZE,
                m if m.starts_with("MSS") => errno::MSS,
                m if m.starts_with("the test needs a time") => errno::DURATION,
                _ => errno::RECV_PARAMS,
            };
            refuse(code, e.0)
        })?;
        Ok(spec)
    }

    /// The parameters our iperf3-compatible client sends for `spec`.
    pub fn from_spec(spec: &BandwidthSpec, get_server_output: bool, client_version: &str) -> Self {
        Self {
            protocol: spec.protocol,
            omit_s: (spec.omit_ns / 1_000_000_000) as u32,
            time_s: if spec.bytes.is_some() {
                0
            } else {
                spec.duration_ns.div_ceil(1_000_000_000) as u32
            },
            num: spec.bytes.unwrap_or(0),
            blockcount: 0,
            mss: spec.mss,
            nodelay: spec.no_delay,
            parallel: spec.parallel,
            reverse: spec.direction == Direction::Download,
            bidirectional: spec.direction == Direction::Bidir,
            window: spec.window,
            len: spec.length,
            bandwidth: spec.bitrate_bps,
            tos: spec.dscp.map(|d| d << 2),
            congestion: spec.congestion.clone(),
            get_server_output,
            udp_counters_64bit: true,
            zerocopy: spec.zerocopy,
            has_authtoken: false,
            client_version: Some(client_version.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Params, ParamError> {
        Params::from_json(v.as_object().unwrap())
    }

    /// What iperf3 3.12 sends for `-u -b 10M -P 2 -R -t 3 -l 1200 --udp-counters-64bit`.
    fn stock_udp() -> Value {
        json!({"udp":true,"omit":0,"time":3,"num":0,"blockcount":0,"parallel":2,"reverse":true,
               "len":1200,"bandwidth":10000000,"pacing_timer":1000,"udp_counters_64bit":1,
               "client_version":"3.12"})
    }

    #[test]
    fn a_stock_document_maps_to_the_same_test() {
        let p = parse(stock_udp()).unwrap();
        let spec = p.to_spec("c").unwrap();
        assert_eq!(spec.protocol, Protocol::Udp);
        assert_eq!(spec.direction, Direction::Download);
        assert_eq!((spec.parallel, spec.length, spec.bitrate_bps), (2, 1200, 10_000_000));
        assert_eq!(spec.duration_ns, 3_000_000_000);
        assert!(p.udp_counters_64bit && !p.get_server_output);
    }

    #[test]
    fn round_trips_through_our_client_document() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.parallel = 4;
        spec.direction = Direction::Bidir;
        spec.window = Some(1 << 20);
        spec.mss = Some(1400);
        spec.congestion = Some("cubic".into());
        spec.dscp = Some(46);
        spec.bytes = Some(1 << 30);
        let p = Params::from_spec(&spec, true, "3.12");
        let back = parse(p.to_json()).unwrap();
        assert_eq!(back, p);
        let mut spec2 = back.to_spec("h").unwrap();
        spec2.duration_ns = spec.duration_ns;
        assert_eq!(spec2, spec);
    }

    #[test]
    fn wrong_types_and_ranges_are_refused_with_iperf3_error_numbers() {
        let cases = [
            (json!({"tcp":"yes","parallel":1}), errno::RECV_PARAMS),
            (json!({"tcp":true,"parallel":"1"}), errno::RECV_PARAMS),
            (json!({"tcp":true,"parallel":129}), errno::RECV_PARAMS),
            (json!({"tcp":true,"parallel":0}), errno::NUM_STREAMS),
            (json!({"tcp":true,"time":1.5}), errno::RECV_PARAMS),
            (json!({"tcp":true,"time":-1}), errno::RECV_PARAMS),
            (json!({"tcp":true,"congestion":["bbr"]}), errno::RECV_PARAMS),
            (json!({"tcp":true,"title":7}), errno::RECV_PARAMS),
            (json!({"tcp":true,"udp":true}), errno::RECV_PARAMS),
            (json!({"sctp":true}), errno::PROTOCOL),
            (json!({}), errno::RECV_PARAMS),
        ];
        for (doc, code) in cases {
            let got = parse(doc.clone()).map(|_| ()).unwrap_err();
            assert_eq!(got.errno, code, "{doc}: {got}");
        }
        let spec_cases = [
            (json!({"udp":true,"time":1,"len":8}), errno::UDP_BLOCK_SIZE),
            (json!({"tcp":true,"time":0}), errno::DURATION),
            (json!({"tcp":true,"time":1,"reverse":true,"bidirectional":true}), errno::RECV_PARAMS),
            (json!({"tcp":true,"time":1,"congestion":"../x"}), errno::RECV_PARAMS),
        ];
        for (doc, code) in spec_cases {
            let got = parse(doc.clone()).unwrap().to_spec("c").unwrap_err();
            assert_eq!(got.errno, code, "{doc}: {got}");
        }
    }

    #[test]
    fn block_counts_become_bytes() {
        let p = parse(json!({"tcp":true,"time":0,"blockcount":10,"len":1000})).unwrap();
        assert_eq!(p.to_spec("c").unwrap().bytes, Some(10_000));
    }
}
