//! Writes small MaxMind DB files (format 2.0: a binary search tree of 24-bit records over IPv6,
//! IPv4 under `::/96`, then the data section and the metadata), so the GeoIP tests can give the
//! server a real `.mmdb` with test networks in it. The tests also read each file back with
//! libmaxminddb's `mmdblookup`, so the format is checked by MaxMind's own reader too.

use std::net::IpAddr;

/// A value in the data section.
pub(crate) enum Value {
    Str(&'static str),
    U16(u16),
    U32(u32),
    U64(u64),
    Map(Vec<(&'static str, Value)>),
    Array(Vec<Value>),
}

fn control(out: &mut Vec<u8>, kind: u8, size: usize) {
    let (first, extra): (u8, Vec<u8>) = match size {
        0..=28 => (size as u8, vec![]),
        29..=284 => (29, vec![(size - 29) as u8]),
        _ => (30, ((size - 285) as u16).to_be_bytes().to_vec()),
    };
    if kind <= 7 {
        out.push(kind << 5 | first);
    } else {
        out.push(first);
        out.push(kind - 7);
    }
    out.extend(extra);
}

/// An unsigned integer of type `kind` in as few bytes as it needs.
fn uint(out: &mut Vec<u8>, kind: u8, be: &[u8]) {
    let bytes: Vec<u8> = be.iter().copied().skip_while(|b| *b == 0).collect();
    control(out, kind, bytes.len());
    out.extend(bytes);
}

fn encode(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Str(s) => {
            control(out, 2, s.len());
            out.extend_from_slice(s.as_bytes());
        }
        Value::U16(n) => uint(out, 5, &n.to_be_bytes()),
        Value::U32(n) => uint(out, 6, &n.to_be_bytes()),
        Value::U64(n) => uint(out, 9, &n.to_be_bytes()),
        Value::Map(pairs) => {
            control(out, 7, pairs.len());
            for (k, v) in pairs {
                encode(out, &Value::Str(k));
                encode(out, v);
            }
        }
        Value::Array(items) => {
            control(out, 11, items.len());
            for v in items {
                encode(out, v);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Record {
    Empty,
    Node(usize),
    Data(usize),
}

/// A database of `networks` (address, prefix length, record), of `database_type`.
pub(crate) fn write(database_type: &'static str, networks: Vec<(IpAddr, u8, Value)>) -> Vec<u8> {
    let mut nodes: Vec<[Record; 2]> = vec![[Record::Empty; 2]];
    let mut data = Vec::new();
    for (ip, prefix, value) in networks {
        let (bits, len) = match ip {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 96 + u32::from(prefix)),
            IpAddr::V6(v6) => (u128::from(v6), u32::from(prefix)),
        };
        let offset = data.len();
        encode(&mut data, &value);
        let mut node = 0;
        for depth in 0..len {
            let bit = ((bits >> (127 - depth)) & 1) as usize;
            if depth + 1 == len {
                nodes[node][bit] = Record::Data(offset);
            } else {
                node = match nodes[node][bit] {
                    Record::Node(n) => n,
                    _ => {
                        nodes.push([Record::Empty; 2]);
                        let n = nodes.len() - 1;
                        nodes[node][bit] = Record::Node(n);
                        n
                    }
                };
            }
        }
    }
    let count = nodes.len();
    let mut out = Vec::new();
    for pair in &nodes {
        for r in pair {
            let v = match *r {
                Record::Empty => count,
                Record::Node(n) => n,
                Record::Data(off) => count + 16 + off,
            };
            out.extend_from_slice(&(v as u32).to_be_bytes()[1..]);
        }
    }
    out.extend_from_slice(&[0u8; 16]);
    out.extend(data);
    out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    let meta = Value::Map(vec![
        ("node_count", Value::U32(count as u32)),
        ("record_size", Value::U16(24)),
        ("ip_version", Value::U16(6)),
        ("database_type", Value::Str(database_type)),
        ("languages", Value::Array(vec![Value::Str("en")])),
        ("binary_format_major_version", Value::U16(2)),
        ("binary_format_minor_version", Value::U16(0)),
        ("build_epoch", Value::U64(1_796_000_000)),
        ("description", Value::Map(vec![("en", Value::Str("wirespeed test networks"))])),
    ]);
    encode(&mut out, &meta);
    out
}
