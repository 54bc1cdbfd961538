//! A learned flow's MIs in a multi-flow run, as its loop closed them: the simulator's
//! counterpart of the MI records `mocc net run` keeps on the real path.

use mocc_policy::{Mode, MonitorInterval};

/// One MI a learned flow closed, and what its loop did next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowMi {
    /// When the MI closed (s from the run's start).
    pub closed_s: f64,
    /// The MI's statistics, as a deployed controller is fed them.
    pub mi: MonitorInterval,
    /// The latency baseline the flow's history holds after it (s): what `latency ratio`
    /// divides by.
    pub baseline_s: f64,
    /// The policy that takes the flow's next decision.
    pub mode: Mode,
    /// Whether the loop, not the agent, paces the next MI (a startup or base-RTT probe MI).
    pub loop_paced: bool,
    /// The next MI's pacing rate (packets/s).
    pub next_rate_pps: f64,
}

impl FlowMi {
    /// Header of [`FlowMi::to_csv_row`]'s rows: the loop's columns, then the MI's
    /// ([`MonitorInterval::CSV_HEADER`]).
    pub fn csv_header() -> String {
        format!(
            "closed_s,next_rate_pps,mode,loop_paced,baseline_s,{}",
            MonitorInterval::CSV_HEADER
        )
    }

    /// The record as one CSV row (no newline).
    pub fn to_csv_row(&self) -> String {
        let mode = match self.mode {
            Mode::Cooperative => "cooperative",
            Mode::Competitive => "competitive",
        };
        format!(
            "{},{},{mode},{},{},{}",
            self.closed_s,
            self.next_rate_pps,
            u8::from(self.loop_paced),
            self.baseline_s,
            self.mi.to_csv_row()
        )
    }

    /// A flow's records as a CSV file's text, header first.
    pub fn csv_text(records: &[FlowMi]) -> String {
        let mut text = Self::csv_header();
        text.push('\n');
        for r in records {
            text.push_str(&r.to_csv_row());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_row_of_the_header_s_columns() {
        let record = FlowMi {
            closed_s: 1.5,
            mi: mocc_policy::MonitorInterval {
                bytes_sent: 3000.0,
                send_end_s: 1.5,
                recv_end_s: 1.5,
                ..Default::default()
            },
            baseline_s: 0.05,
            mode: Mode::Competitive,
            loop_paced: true,
            next_rate_pps: 120.0,
        };
        let text = FlowMi::csv_text(&[record]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let header: Vec<&str> = lines[0].split(',').collect();
        let row: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(header.len(), row.len());
        assert_eq!(&row[..5], &["1.5", "120", "competitive", "1", "0.05"]);
        assert_eq!(header[5], "bytes_sent");
        assert_eq!(row[5], "3000");
    }
}
