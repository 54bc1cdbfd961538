//! Mahimahi packet-delivery traces: one integer millisecond timestamp per line, each a
//! delivery opportunity for one 1500-byte packet; the trace repeats with a period equal to its
//! last timestamp. Several opportunities may share a millisecond; timestamps never decrease.

use crate::error::ScenarioError;
use std::path::Path;
use std::sync::Arc;

/// A parsed trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    opportunities_s: Vec<f64>,
    period_s: f64,
}

impl Trace {
    /// Reads and parses a trace file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = mocc_policy::error::read_text(path)?;
        Self::parse(&text, path)
    }

    /// Parses trace text; `path` names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        let err = |line: usize, message: String| ScenarioError::Trace {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut ms: Vec<u64> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 = line.parse().map_err(|_| {
                err(
                    i + 1,
                    format!("expected a non-negative integer millisecond timestamp, got {line:?}"),
                )
            })?;
            if let Some(&prev) = ms.last() {
                if t < prev {
                    return Err(err(
                        i + 1,
                        format!("timestamp {t} ms is smaller than the previous one ({prev} ms)"),
                    ));
                }
            }
            ms.push(t);
        }
        let Some(&last) = ms.last() else {
            return Err(err(0, "the trace holds no delivery opportunity".into()));
        };
        if last == 0 {
            return Err(err(
                ms.len(),
                "the last timestamp must be > 0 ms (it is the trace's period)".into(),
            ));
        }
        Ok(Self {
            opportunities_s: ms.iter().map(|&t| t as f64 / 1000.0).collect(),
            period_s: last as f64 / 1000.0,
        })
    }

    /// Builds a trace from millisecond timestamps (for tests and generated traces).
    pub fn from_millis(ms: &[u64]) -> Result<Self, ScenarioError> {
        let text: String = ms.iter().map(|t| format!("{t}\n")).collect();
        Self::parse(&text, Path::new("<generated>"))
    }

    /// A one-opportunity trace standing in until a deserialized link is re-attached.
    pub(crate) fn placeholder() -> Arc<Self> {
        Arc::new(Self {
            opportunities_s: vec![1.0],
            period_s: 1.0,
        })
    }

    /// Repetition period (s).
    pub fn period_s(&self) -> f64 {
        self.period_s
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.opportunities_s.len()
    }

    /// Never true for a parsed trace.
    pub fn is_empty(&self) -> bool {
        self.opportunities_s.is_empty()
    }

    /// Long-run delivery rate (packets/s).
    pub fn mean_rate_pps(&self) -> f64 {
        self.opportunities_s.len() as f64 / self.period_s
    }

    /// Time of the `k`-th opportunity since time 0, counting repetitions.
    pub fn opportunity_s(&self, k: u64) -> f64 {
        let n = self.opportunities_s.len() as u64;
        (k / n) as f64 * self.period_s + self.opportunities_s[(k % n) as usize]
    }

    /// Index of the first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: f64) -> u64 {
        let n = self.opportunities_s.len() as u64;
        let cycle = (t / self.period_s).floor().max(0.0) as u64;
        let within = t - cycle as f64 * self.period_s;
        let j = self.opportunities_s.partition_point(|&o| o < within) as u64;
        let mut k = cycle * n + j;
        // Guard against rounding at cycle boundaries.
        while k > 0 && self.opportunity_s(k - 1) >= t {
            k -= 1;
        }
        while self.opportunity_s(k) < t {
            k += 1;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_repeats() {
        let t = Trace::parse("1\n1\n3\n4\n", Path::new("x")).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.period_s(), 0.004);
        assert_eq!(t.mean_rate_pps(), 1000.0);
        assert_eq!(t.opportunity_s(0), 0.001);
        assert_eq!(t.opportunity_s(1), 0.001);
        assert_eq!(t.opportunity_s(4), 0.004 + 0.001);
        assert_eq!(t.first_at_or_after(0.0), 0);
        assert_eq!(t.first_at_or_after(0.0015), 2);
        assert_eq!(t.first_at_or_after(0.004), 3);
        assert_eq!(t.first_at_or_after(0.0041), 4);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Trace::parse("1\n2\nx\n", Path::new("t.trace")).unwrap_err();
        assert!(e.to_string().starts_with("t.trace:3:"), "{e}");
        let e = Trace::parse("5\n3\n", Path::new("t.trace")).unwrap_err();
        assert!(e.to_string().starts_with("t.trace:2:"), "{e}");
        let e = Trace::parse("\n\n", Path::new("t.trace")).unwrap_err();
        assert!(e.to_string().contains("no delivery opportunity"), "{e}");
        let e = Trace::parse("-1\n", Path::new("t.trace")).unwrap_err();
        assert!(e.to_string().starts_with("t.trace:1:"), "{e}");
    }
}
