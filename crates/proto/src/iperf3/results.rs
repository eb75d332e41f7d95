//! The results document each side sends at EXCHANGE_RESULTS: CPU use, whether the sender has
//! retransmit counts, and one entry per stream. Read with types and ranges checked.

use serde_json::{json, Map, Value};
use wirespeed_model::flow::{Direction, Flow};

use crate::codec::DecodeError;

/// One stream's line in a results document.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    /// iperf3's stream id (1, 3, 4, 5, … in creation order).
    pub id: u32,
    /// Bytes sent (after the warm-up) by a sending stream, or received by a receiving one.
    pub bytes: u64,
    /// TCP retransmits of a sending stream, −1 otherwise.
    pub retransmits: i64,
    /// UDP jitter in seconds (receiving streams).
    pub jitter_s: f64,
    /// UDP datagrams lost (receiving streams).
    pub errors: u64,
    /// UDP: highest sequence number seen (receiver) or datagrams sent (sender).
    pub packets: u64,
    /// Seconds from the stream's start to its start (always 0) and to its end.
    pub start_time_s: f64,
    /// See `start_time_s`.
    pub end_time_s: f64,
    /// UDP: `packets` and `errors` as they stood when the warm-up ended, where the document
    /// says (3.21 writes both, Debian's 3.12 neither).
    pub omitted: Option<Omitted>,
}

/// A stream's UDP counts at the end of the warm-up (`omitted_packets`, `omitted_errors`): what
/// the other end subtracts from `packets` and `errors` to leave the warm-up out. iperf3 3.21
/// takes a document without them to mean that every datagram fell in the warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Omitted {
    /// `packets` when the warm-up ended.
    pub packets: u64,
    /// `errors` when the warm-up ended.
    pub errors: u64,
}

/// A whole results document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    /// Process CPU use in percent: total, user, system.
    pub cpu_util: [f64; 3],
    /// 1 or 0 when this side sent TCP data, −1 when it only received.
    pub sender_has_retransmits: i64,
    /// The congestion control this side used, if known.
    pub congestion_used: Option<String>,
    /// Per-stream figures.
    pub streams: Vec<StreamResult>,
    /// The server's own report in iperf3's JSON schema (`--get-server-output`).
    pub server_output_json: Option<Value>,
    /// The server's own report as text (`--get-server-output` against a text-mode server).
    pub server_output_text: Option<String>,
}

fn invalid(msg: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(msg.into())
}

fn num(m: &Map<String, Value>, key: &str) -> Result<f64, DecodeError> {
    match m.get(key) {
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|v| v.is_finite())
            .ok_or_else(|| invalid(format!("'{key}' is not finite"))),
        Some(_) => Err(invalid(format!("results field '{key}' must be a number"))),
        None => Err(invalid(format!("results lack '{key}'"))),
    }
}

fn count(m: &Map<String, Value>, key: &str) -> Result<u64, DecodeError> {
    let v = num(m, key)?;
    if !(0.0..=2f64.powi(63)).contains(&v) {
        return Err(invalid(format!("results field '{key}' = {v} is out of range")));
    }
    Ok(v as u64)
}

fn opt_num(m: &Map<String, Value>, key: &str) -> Result<Option<f64>, DecodeError> {
    if m.contains_key(key) {
        num(m, key).map(Some)
    } else {
        Ok(None)
    }
}

/// A stream's `omitted_packets` and `omitted_errors`: both or neither, as iperf3 reads them.
fn omitted(m: &Map<String, Value>) -> Result<Option<Omitted>, DecodeError> {
    match (m.contains_key("omitted_packets"), m.contains_key("omitted_errors")) {
        (false, false) => Ok(None),
        (true, true) => Ok(Some(Omitted {
            packets: count(m, "omitted_packets")?,
            errors: count(m, "omitted_errors")?,
        })),
        _ => Err(invalid("a stream result has one of 'omitted_packets' and 'omitted_errors'")),
    }
}

/// Most streams a results document may list (128 per direction).
const MAX_STREAMS: usize = 256;

impl Results {
    /// Reads a results document.
    pub fn from_json(m: &Map<String, Value>) -> Result<Self, DecodeError> {
        let mut cpu_util = [0.0; 3];
        for (slot, key) in
            cpu_util.iter_mut().zip(["cpu_util_total", "cpu_util_user", "cpu_util_system"])
        {
            *slot = num(m, key)?;
        }
        let sender_has_retransmits = num(m, "sender_has_retransmits")? as i64;
        let congestion_used = match m.get("congestion_used") {
            None => None,
            Some(Value::String(s)) if s.len() <= 64 => Some(s.clone()),
            Some(_) => {
                return Err(invalid("results field 'congestion_used' must be a short string"))
            }
        };
        let Some(Value::Array(list)) = m.get("streams") else {
            return Err(invalid("results lack a 'streams' array"));
        };
        if list.len() > MAX_STREAMS {
            return Err(invalid(format!("results list {} streams", list.len())));
        }
        let mut streams = Vec::with_capacity(list.len());
        for s in list {
            let Value::Object(s) = s else {
                return Err(invalid("a stream result is not an object"));
            };
            let id = count(s, "id")?;
            let retransmits = num(s, "retransmits")?;
            streams.push(StreamResult {
                id: u32::try_from(id).map_err(|_| invalid("stream id out of range"))?,
                bytes: count(s, "bytes")?,
                retransmits: if retransmits < 0.0 { -1 } else { retransmits as i64 },
                jitter_s: num(s, "jitter")?.max(0.0),
                errors: count(s, "errors")?,
                packets: count(s, "packets")?,
                start_time_s: opt_num(s, "start_time")?.unwrap_or(0.0),
                end_time_s: opt_num(s, "end_time")?.unwrap_or(0.0),
                omitted: omitted(s)?,
            });
        }
        let server_output_json = m.get("server_output_json").cloned();
        let server_output_text = match m.get("server_output_text") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid("'server_output_text' must be a string")),
        };
        Ok(Self {
            cpu_util,
            sender_has_retransmits,
            congestion_used,
            streams,
            server_output_json,
            server_output_text,
        })
    }

    /// The document as iperf3 writes it.
    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                let mut v = json!({
                    "id": s.id, "bytes": s.bytes, "retransmits": s.retransmits,
                    "jitter": s.jitter_s, "errors": s.errors, "packets": s.packets,
                    "start_time": s.start_time_s, "end_time": s.end_time_s,
                });
                if let Some(o) = s.omitted {
                    v["omitted_packets"] = o.packets.into();
                    v["omitted_errors"] = o.errors.into();
                }
                v
            })
            .collect();
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), self.cpu_util[0].into());
        m.insert("cpu_util_user".into(), self.cpu_util[1].into());
        m.insert("cpu_util_system".into(), self.cpu_util[2].into());
        m.insert("sender_has_retransmits".into(), self.sender_has_retransmits.into());
        if let Some(cc) = &self.congestion_used {
            m.insert("congestion_used".into(), cc.clone().into());
        }
        if let Some(v) = &self.server_output_json {
            m.insert("server_output_json".into(), v.clone());
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), t.clone().into());
        }
        m.insert("streams".into(), streams.into());
        Value::Object(m)
    }
}

/// iperf3's stream ids in creation order: 1, then 3, 4, 5, … (a quirk kept for compatibility).
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

/// The (flow, per-flow stream number) of the `index`-th stream in creation order. In `--bidir`
/// the client creates its sending streams first.
pub fn stream_slot(direction: Direction, parallel: u16, index: usize) -> (Flow, u16) {
    let n = usize::from(parallel.max(1));
    let flow = match direction {
        Direction::Upload => Flow::Upload,
        Direction::Download => Flow::Download,
        Direction::Bidir if index < n => Flow::Upload,
        Direction::Bidir => Flow::Download,
    };
    (flow, (index % n) as u16 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_types() {
        let r = Results {
            cpu_util: [12.5, 1.0, 11.5],
            sender_has_retransmits: 1,
            congestion_used: Some("cubic".into()),
            streams: vec![StreamResult {
                id: 1,
                bytes: 5 << 32,
                retransmits: 3,
                jitter_s: 0.0,
                errors: 0,
                packets: 0,
                start_time_s: 0.0,
                end_time_s: 10.0,
                omitted: Some(Omitted { packets: 7, errors: 1 }),
            }],
            server_output_json: None,
            server_output_text: Some("hi".into()),
        };
        let v = r.to_json();
        assert_eq!(Results::from_json(v.as_object().unwrap()).unwrap(), r);
        // Without the warm-up's counts: an older iperf3's document.
        let mut older = v.clone();
        let stream = older["streams"][0].as_object_mut().unwrap();
        stream.remove("omitted_packets");
        stream.remove("omitted_errors");
        let read = Results::from_json(older.as_object().unwrap()).unwrap();
        assert_eq!(read.streams[0].omitted, None);
        // One without the other is refused, as iperf3 refuses it.
        let mut bad = v.clone();
        bad["streams"][0].as_object_mut().unwrap().remove("omitted_errors");
        assert!(Results::from_json(bad.as_object().unwrap()).is_err());
        let mut bad = v.clone();
        bad["streams"][0]["bytes"] = "many".into();
        assert!(Results::from_json(bad.as_object().unwrap()).is_err());
        let mut bad = v.clone();
        bad["streams"] = json!({});
        assert!(Results::from_json(bad.as_object().unwrap()).is_err());
        let mut bad = v;
        bad.as_object_mut().unwrap().remove("cpu_util_user");
        assert!(Results::from_json(bad.as_object().unwrap()).is_err());
    }

    #[test]
    fn bidir_streams_are_the_clients_senders_first() {
        let slots: Vec<_> = (0..4).map(|i| stream_slot(Direction::Bidir, 2, i)).collect();
        assert_eq!(
            slots,
            [(Flow::Upload, 1), (Flow::Upload, 2), (Flow::Download, 1), (Flow::Download, 2)]
        );
        assert_eq!(stream_slot(Direction::Download, 3, 2), (Flow::Download, 3));
    }

    #[test]
    fn stream_ids_skip_two() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), [1, 3, 4, 5]);
    }
}
