//! The rate of a deployed sender whose application, not its rate, limited what it sent.
//!
//! In training a learned sender always has data: every MI sends what its rate allows, and the
//! policy's statistics describe the path at that rate. A deployed application often sends less
//! (a 30 fps stream, a video player between chunks, a request-response exchange): its MIs
//! then carry the application's bursts and pauses, not the path's answer to the rate, and a
//! policy reading them lowers its rate below what the application needs (a frame's burst
//! reads as a queue, one loss in a 10-packet MI as 10%), so that frames wait in the sender.
//!
//! The rule, for an MI in which the application ran out of data ([`crate::MiLedger`] learns
//! it from the transport): the rate does not fall, since the MI did not test it (as BBR keeps
//! its bandwidth estimate through application-limited samples). Where the application was out
//! of data at both of the MI's ends ([`AppLimit::Wholly`]), what the MI sent is what the
//! application wrote, and the rate may grow to [`APP_LIMITED_HEADROOM`] times it, no further
//! (RFC 7661's rule that a window more than twice what was used is not grown): a stream then
//! paces its frames at twice its own rate, whatever the policy would make of its pauses. An MI
//! that began or ended with data waiting ([`AppLimit::Partly`]: a download's last chunk, or
//! the first packets after a pause, sent in a burst) holds the rate: its sending rate is not
//! the application's. The policy decides again from the first MI in which the application
//! always had data, with every MI recorded in its history. A base-RTT probe of such a sender
//! paces no slower than its application last sent ([`crate::Controller::rate_pps`]): it queues
//! little of its own at the bottleneck, and a probe at a quarter of its rate would hold a
//! stream's frames at the sender for the probe's MIs.

/// How far above the rate an application used the rate may grow while the application limits
/// the sender (RFC 7661: a window is grown only while at least half of it is used).
pub const APP_LIMITED_HEADROOM: f64 = 2.0;

/// Whether, and how, the application limited a sender during an MI.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AppLimit {
    /// The application always had data waiting (as in training): the rate limited the sender.
    #[default]
    Not,
    /// The application ran out of data during the MI, but had data waiting when it began or
    /// when it ended.
    Partly,
    /// The application was out of data when the MI began and when it ended: the MI sent what
    /// the application wrote.
    Wholly,
}

impl AppLimit {
    /// Whether the application ran out of data at all.
    pub fn any(self) -> bool {
        self != Self::Not
    }

    /// The name in files: `not`, `partly`, `wholly`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Not => "not",
            Self::Partly => "partly",
            Self::Wholly => "wholly",
        }
    }
}

/// The agent's rate after an application-limited MI that sent `sent_pps` (packets/s) while
/// allowed `before_pps`: never lower; for [`AppLimit::Wholly`], raised to
/// [`APP_LIMITED_HEADROOM`] times `sent_pps`. For [`AppLimit::Not`], `before_pps` (the agent
/// decides those MIs).
pub fn app_limited_rate(limit: AppLimit, before_pps: f64, sent_pps: f64) -> f64 {
    let used = if limit == AppLimit::Wholly && sent_pps.is_finite() && sent_pps > 0.0 {
        APP_LIMITED_HEADROOM * sent_pps
    } else {
        0.0
    };
    before_pps.max(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_lowers_and_grows_to_twice_a_wholly_limited_use() {
        // A 216 pkt/s stream allowed 276: grows to 432.
        assert_eq!(app_limited_rate(AppLimit::Wholly, 276.0, 216.0), 432.0);
        // The same MI with data waiting at one end (a burst after a pause): held.
        assert_eq!(app_limited_rate(AppLimit::Partly, 276.0, 216.0), 276.0);
        // Allowed 5,000, used 216: the allowance stands (validated when it was set).
        assert_eq!(app_limited_rate(AppLimit::Wholly, 5000.0, 216.0), 5000.0);
        // Nothing sent (an idle application): held.
        assert_eq!(app_limited_rate(AppLimit::Wholly, 300.0, 0.0), 300.0);
        assert_eq!(app_limited_rate(AppLimit::Wholly, 300.0, f64::NAN), 300.0);
    }

    #[test]
    fn names() {
        let names = [AppLimit::Not, AppLimit::Partly, AppLimit::Wholly].map(AppLimit::as_str);
        assert_eq!(names, ["not", "partly", "wholly"]);
        assert!(!AppLimit::Not.any() && AppLimit::Partly.any() && AppLimit::Wholly.any());
    }
}
