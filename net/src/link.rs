//! The emulated path's parameters, in the simulator's units (packets/s, seconds, packets).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{NetError, Result};

/// IP packet size the units refer to: the bottleneck serves `bandwidth_pps` packets of this size.
pub const PACKET_BYTES: u32 = 1500;

/// Ethernet header the kernel counts on a veth (tbf meters `skb->len`, which includes it).
pub const ETHERNET_HEADER_BYTES: u32 = 14;

/// Loss probabilities are applied in steps of 1/LOSS_RESOLUTION (nftables `numgen random mod`).
pub const LOSS_RESOLUTION: u32 = 10_000;

/// Largest accepted bandwidth (packets/s): 12 Gbit/s of 1500-byte packets, beyond a veth.
pub const MAX_BANDWIDTH_PPS: f64 = 1e6;

/// Largest accepted one-way delay (s).
pub const MAX_DELAY_S: f64 = 10.0;

/// One emulated path: a drop-tail bottleneck from sender to receiver, random loss on that
/// direction, and a constant propagation delay each way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Bottleneck rate in packets/s of 1500-byte IP packets (Mbit/s = pps * 1500 * 8 / 1e6).
    pub bandwidth_pps: f64,
    /// One-way propagation delay (s); the round trip gets twice this.
    pub delay_s: f64,
    /// Drop-tail queue capacity of the bottleneck, packets.
    pub queue_pkts: u32,
    /// Random loss probability of packets from sender to receiver, in [0, 1), applied in
    /// steps of 1e-4.
    pub loss: f64,
}

impl PathSpec {
    /// Checks every field; the error names the first one out of its domain.
    pub fn validate(&self) -> Result<()> {
        validate_bandwidth(self.bandwidth_pps)?;
        validate_delay(self.delay_s)?;
        if self.queue_pkts == 0 {
            return Err(invalid("queue_pkts", "must be at least 1 packet".into()));
        }
        validate_loss(self.loss)
    }

    /// The bottleneck rate in Mbit/s of IP bytes.
    pub fn mbit_per_s(&self) -> f64 {
        self.bandwidth_pps * f64::from(PACKET_BYTES) * 8.0 / 1e6
    }

    /// The rate handed to tbf, bit/s: tbf also counts the Ethernet header, so this is what
    /// makes it serve exactly `bandwidth_pps` packets of 1500 IP bytes.
    pub fn tbf_rate_bit_per_s(&self) -> u64 {
        tbf_rate_bit_per_s(self.bandwidth_pps)
    }

    /// The round-trip propagation delay the delay line holds each returning packet for.
    pub fn round_trip_delay(&self) -> Duration {
        round_trip_delay(self.delay_s)
    }

    /// The loss probability in units of 1/LOSS_RESOLUTION, as the nftables rule compares it.
    pub fn loss_per_resolution(&self) -> u32 {
        loss_per_resolution(self.loss)
    }
}

/// Checks a bandwidth in packets/s.
pub fn validate_bandwidth(bandwidth_pps: f64) -> Result<()> {
    if !(bandwidth_pps.is_finite() && bandwidth_pps > 0.0 && bandwidth_pps <= MAX_BANDWIDTH_PPS) {
        return Err(invalid(
            "bandwidth_pps",
            format!("{bandwidth_pps} is not in (0, {MAX_BANDWIDTH_PPS}]"),
        ));
    }
    Ok(())
}

/// Checks a one-way delay in seconds.
pub fn validate_delay(delay_s: f64) -> Result<()> {
    if !(delay_s.is_finite() && (0.0..=MAX_DELAY_S).contains(&delay_s)) {
        return Err(invalid(
            "delay_s",
            format!("{delay_s} is not in [0, {MAX_DELAY_S}]"),
        ));
    }
    Ok(())
}

/// Checks a loss probability.
pub fn validate_loss(loss: f64) -> Result<()> {
    if !(loss.is_finite() && (0.0..1.0).contains(&loss)) {
        return Err(invalid("loss", format!("{loss} is not in [0, 1)")));
    }
    Ok(())
}

/// tbf rate (bit/s) serving `bandwidth_pps` 1500-byte IP packets plus their Ethernet header.
pub fn tbf_rate_bit_per_s(bandwidth_pps: f64) -> u64 {
    let wire_bytes = f64::from(PACKET_BYTES + ETHERNET_HEADER_BYTES);
    (bandwidth_pps * wire_bytes * 8.0).round() as u64
}

/// Twice the one-way delay.
pub fn round_trip_delay(delay_s: f64) -> Duration {
    Duration::from_secs_f64(2.0 * delay_s)
}

/// `loss` rounded to units of 1/LOSS_RESOLUTION.
pub fn loss_per_resolution(loss: f64) -> u32 {
    (loss * f64::from(LOSS_RESOLUTION)).round() as u32
}

fn invalid(field: &'static str, message: String) -> NetError {
    NetError::InvalidSpec { field, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PathSpec {
        PathSpec {
            bandwidth_pps: 1000.0,
            delay_s: 0.025,
            queue_pkts: 100,
            loss: 0.01,
        }
    }

    #[test]
    fn a_sane_spec_validates() {
        spec().validate().unwrap();
    }

    #[test]
    fn units_are_hand_computed() {
        let s = spec();
        assert!((s.mbit_per_s() - 12.0).abs() < 1e-12);
        // 1000 * 1514 * 8
        assert_eq!(s.tbf_rate_bit_per_s(), 12_112_000);
        assert_eq!(s.round_trip_delay(), Duration::from_millis(50));
        assert_eq!(s.loss_per_resolution(), 100);
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            (
                PathSpec {
                    bandwidth_pps: 0.0,
                    ..spec()
                },
                "bandwidth_pps",
            ),
            (
                PathSpec {
                    bandwidth_pps: f64::NAN,
                    ..spec()
                },
                "bandwidth_pps",
            ),
            (
                PathSpec {
                    delay_s: -0.1,
                    ..spec()
                },
                "delay_s",
            ),
            (
                PathSpec {
                    delay_s: f64::INFINITY,
                    ..spec()
                },
                "delay_s",
            ),
            (
                PathSpec {
                    queue_pkts: 0,
                    ..spec()
                },
                "queue_pkts",
            ),
            (
                PathSpec {
                    loss: 1.0,
                    ..spec()
                },
                "loss",
            ),
            (
                PathSpec {
                    loss: -0.01,
                    ..spec()
                },
                "loss",
            ),
        ];
        for (bad, field) in cases {
            match bad.validate() {
                Err(NetError::InvalidSpec { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{bad:?}: expected an error on {field}, got {other:?}"),
            }
        }
    }
}
