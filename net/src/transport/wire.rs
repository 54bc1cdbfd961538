//! The datagrams of a controlled flow: data packets carry the flow, a sequence number and the
//! sender's send time; each is answered by an acknowledgement that echoes the three. Fixed
//! little-endian layouts behind a magic number, so a stray datagram is ignored, not misread.

/// IPv4 + UDP header bytes in front of every payload.
pub const IP_UDP_HEADER_BYTES: usize = 28;
/// Payload of a data datagram, so that its IP packet is the simulator's 1500 bytes.
pub const DATA_PAYLOAD_BYTES: usize = 1500 - IP_UDP_HEADER_BYTES;
/// Bytes of a header (magic, kind, flow, sequence, send time).
pub const HEADER_BYTES: usize = 4 + 1 + 2 + 8 + 8;

const MAGIC: u32 = 0x6d6f_6363; // "mocc"
const KIND_DATA: u8 = 1;
const KIND_ACK: u8 = 2;

/// What a data packet and its acknowledgement carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The flow (several flows may share a receiver).
    pub flow: u16,
    /// Sequence number, from 0.
    pub seq: u64,
    /// Send time on the sender's monotonic clock (ns).
    pub sent_ns: u64,
}

/// A datagram's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Data, to be acknowledged.
    Data,
    /// An acknowledgement of the data packet it echoes.
    Ack,
}

/// Writes `stamp` as a `kind` header at the start of `buf` (at least [`HEADER_BYTES`] long).
pub fn encode(kind: Kind, stamp: &Stamp, buf: &mut [u8]) {
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    buf[4] = match kind {
        Kind::Data => KIND_DATA,
        Kind::Ack => KIND_ACK,
    };
    buf[5..7].copy_from_slice(&stamp.flow.to_le_bytes());
    buf[7..15].copy_from_slice(&stamp.seq.to_le_bytes());
    buf[15..23].copy_from_slice(&stamp.sent_ns.to_le_bytes());
}

/// Reads a header; `None` for anything that is not one of ours.
pub fn decode(buf: &[u8]) -> Option<(Kind, Stamp)> {
    if buf.len() < HEADER_BYTES || buf[0..4] != MAGIC.to_le_bytes() {
        return None;
    }
    let kind = match buf[4] {
        KIND_DATA => Kind::Data,
        KIND_ACK => Kind::Ack,
        _ => return None,
    };
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let stamp = Stamp {
        flow: u16::from_le_bytes([buf[5], buf[6]]),
        seq: u64_at(7),
        sent_ns: u64_at(15),
    };
    Some((kind, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_strangers_are_ignored() {
        let s = Stamp {
            flow: 7,
            seq: u64::MAX - 1,
            sent_ns: 123_456_789,
        };
        let mut buf = [0u8; DATA_PAYLOAD_BYTES];
        encode(Kind::Data, &s, &mut buf);
        assert_eq!(decode(&buf), Some((Kind::Data, s)));
        encode(Kind::Ack, &s, &mut buf[..HEADER_BYTES]);
        assert_eq!(decode(&buf[..HEADER_BYTES]), Some((Kind::Ack, s)));
        assert_eq!(decode(&buf[..HEADER_BYTES - 1]), None);
        buf[0] ^= 1;
        assert_eq!(decode(&buf), None);
        buf[0] ^= 1;
        buf[4] = 9;
        assert_eq!(decode(&buf), None);
        assert_eq!(DATA_PAYLOAD_BYTES + IP_UDP_HEADER_BYTES, 1500);
    }
}
