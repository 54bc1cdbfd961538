//! The one accumulator of per-MI network statistics: sums over MIs and their means, as training
//! logs them (`network/*`) and evaluation reports them (results.csv).

use mocc_gym::StepInfo;

/// Sums of one sender's per-MI statistics. RTT means cover only the MIs that have RTT samples
/// (and a positive propagation RTT to compare with); the other means cover every MI.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MiStats {
    utilization: f64,
    throughput_pps: f64,
    loss: f64,
    mis: f64,
    rtt_s: f64,
    rtt_ratio: f64,
    rtt_mis: f64,
}

impl MiStats {
    /// Folds one MI in.
    pub fn add(&mut self, i: &StepInfo) {
        self.utilization += i.utilization;
        self.throughput_pps += i.throughput_pps;
        self.loss += i.loss;
        self.mis += 1.0;
        if i.mean_rtt_s > 0.0 && i.base_rtt_s > 0.0 {
            self.rtt_s += i.mean_rtt_s;
            self.rtt_ratio += i.mean_rtt_s / i.base_rtt_s;
            self.rtt_mis += 1.0;
        }
    }

    /// MIs folded in.
    pub fn mis(&self) -> usize {
        self.mis as usize
    }

    /// MIs with RTT samples.
    pub fn rtt_mis(&self) -> usize {
        self.rtt_mis as usize
    }

    /// Mean utilization (0 without MIs).
    pub fn utilization(&self) -> f64 {
        self.utilization / self.mis.max(1.0)
    }

    /// Mean delivered packets per second (0 without MIs).
    pub fn throughput_pps(&self) -> f64 {
        self.throughput_pps / self.mis.max(1.0)
    }

    /// Mean loss ratio (0 without MIs).
    pub fn loss(&self) -> f64 {
        self.loss / self.mis.max(1.0)
    }

    /// Mean RTT over the MIs with samples (NaN without: undefined, not 0).
    pub fn mean_rtt_s(&self) -> f64 {
        if self.rtt_mis > 0.0 {
            self.rtt_s / self.rtt_mis
        } else {
            f64::NAN
        }
    }

    /// Mean RTT / propagation RTT over the MIs with samples (NaN without: undefined, not 0).
    pub fn rtt_ratio(&self) -> f64 {
        if self.rtt_mis > 0.0 {
            self.rtt_ratio / self.rtt_mis
        } else {
            f64::NAN
        }
    }

    /// The `network/*` scalars training logs (RTT ratio only when some MI had samples).
    pub fn scalars(&self) -> Vec<(&'static str, f64)> {
        if self.mis == 0.0 {
            return Vec::new();
        }
        let mut out = vec![("network/utilization", self.utilization())];
        if self.rtt_mis > 0.0 {
            out.push(("network/rtt_ratio", self.rtt_ratio()));
        }
        out.push(("network/loss", self.loss()));
        out.push(("network/throughput_pps", self.throughput_pps()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi(util: f64, rtt: f64, base: f64) -> StepInfo {
        StepInfo {
            utilization: util,
            throughput_pps: 100.0 * util,
            mean_rtt_s: rtt,
            base_rtt_s: base,
            loss: 0.01,
            ..StepInfo::default()
        }
    }

    #[test]
    fn rtt_means_skip_mis_without_samples() {
        let mut s = MiStats::default();
        s.add(&mi(1.0, 0.2, 0.1));
        s.add(&mi(0.5, 0.0, 0.1));
        s.add(&mi(0.0, 0.3, 0.0));
        assert_eq!(s.mis(), 3);
        assert_eq!(s.rtt_mis(), 1);
        assert!((s.utilization() - 0.5).abs() < 1e-12);
        assert!((s.throughput_pps() - 50.0).abs() < 1e-12);
        assert!((s.mean_rtt_s() - 0.2).abs() < 1e-12);
        assert!((s.rtt_ratio() - 2.0).abs() < 1e-12);
        let tags: Vec<&str> = s.scalars().iter().map(|t| t.0).collect();
        assert_eq!(
            tags,
            [
                "network/utilization",
                "network/rtt_ratio",
                "network/loss",
                "network/throughput_pps"
            ]
        );
    }

    #[test]
    fn empty_stats_have_no_rtt_and_log_nothing() {
        let s = MiStats::default();
        assert_eq!(s.utilization(), 0.0);
        // No RTT sample: the RTT is undefined, not 0.
        assert!(s.mean_rtt_s().is_nan() && s.rtt_ratio().is_nan());
        assert!(s.scalars().is_empty());
        let mut no_rtt = MiStats::default();
        no_rtt.add(&mi(1.0, 0.0, 0.1));
        assert!(no_rtt.rtt_ratio().is_nan());
        assert!(!no_rtt.scalars().iter().any(|t| t.0 == "network/rtt_ratio"));
    }
}
