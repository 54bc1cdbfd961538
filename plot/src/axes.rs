//! Axes of a panel and the geometry of what is drawn on it: linear or log scale, ranges fitted
//! to the data, few ticks at round values with tidy labels, lines clipped to the panel, dashes.

use crate::style::Dash;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic (non-positive values are left out).
    Log,
}

/// One axis of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Label, with units.
    pub label: String,
    /// Mapping.
    pub scale: Scale,
    /// Fixed range; `None` fits the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn linear(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
        }
    }

    /// A logarithmic axis fitted to the data.
    pub fn log(label: impl Into<String>) -> Self {
        Self {
            scale: Scale::Log,
            ..Self::linear(label)
        }
    }

    /// The same axis over a fixed range.
    pub fn range(self, lo: f64, hi: f64) -> Self {
        Self {
            range: Some((lo, hi)),
            ..self
        }
    }

    pub(crate) fn axis_units(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => f64::NAN,
        }
    }

    pub(crate) fn value_at(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log => 10f64.powf(v),
        }
    }
}

/// "Nice" tick positions (axis units) for an axis over `[lo, hi]` (axis units), three to seven.
/// A log axis takes the first of 1-2-5, 1-2-3-5 and 1-3 steps per decade that labels both
/// ends (a tick within [`LOG_TICK_REACH`] of each), else the first with three to seven ticks:
/// 0.4-4.6 s is labelled 0.5, 1, 2, 3 rather than 0.5, 1, 2 with its top third bare.
pub(crate) fn ticks(axis: &Axis, lo: f64, hi: f64) -> Vec<f64> {
    if axis.scale == Scale::Linear {
        return linear_ticks(lo, hi);
    }
    let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
    let within = |v: &f64| *v >= lo - 1e-9 && *v <= hi + 1e-9;
    let steps = [
        &[1.0, 2.0, 5.0][..],
        &[1.0, 2.0, 3.0, 5.0][..],
        &[1.0, 3.0][..],
    ];
    let candidates: Vec<Vec<f64>> = steps
        .iter()
        .map(|mantissas| {
            (a..=b)
                .flat_map(|e| mantissas.iter().map(move |m| (m * 10f64.powi(e)).log10()))
                .filter(within)
                .collect::<Vec<f64>>()
        })
        .filter(|t| (3..=7).contains(&t.len()))
        .collect();
    let reach = LOG_TICK_REACH.log10();
    let labels_both_ends = |t: &&Vec<f64>| {
        t.first().is_some_and(|&f| f - lo <= reach) && t.last().is_some_and(|&l| hi - l <= reach)
    };
    if let Some(t) = candidates
        .iter()
        .find(labels_both_ends)
        .or(candidates.first())
    {
        return t.clone();
    }
    let decades: Vec<f64> = (a..=b).map(f64::from).filter(within).collect();
    if decades.len() >= 3 {
        let every = decades.len().div_ceil(6);
        return decades.into_iter().step_by(every).collect();
    }
    // Less than a factor of 3: linear steps, placed on the log axis.
    linear_ticks(10f64.powf(lo), 10f64.powf(hi))
        .into_iter()
        .filter(|&v| v > 0.0)
        .map(f64::log10)
        .collect()
}

/// How far (a factor) a log axis's end may lie beyond its nearest tick and count as labelled.
const LOG_TICK_REACH: f64 = 1.6;

pub(crate) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label: no trailing zeros, thousands as `k` and millions as `M` from 10,000 on.
pub fn tick_label(v: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    let a = v.abs();
    if a < 1e-12 {
        "0".into()
    } else if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 {
        trim(format!("{v:.1}"))
    } else {
        // Four significant digits at most, without float noise (0.30000000000000004).
        let digits = (3 - a.log10().floor() as i32).clamp(0, 8) as usize;
        trim(format!("{v:.digits$}"))
    }
}

/// The data range of a panel's axis, in axis units, padded by 4%.
pub(crate) fn fitted_range(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some((lo, hi)) = axis.range {
        return (axis.axis_units(lo), axis.axis_units(hi));
    }
    let (lo, hi) = values
        .map(|v| axis.axis_units(v))
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.04
    } else if axis.scale == Scale::Log {
        0.1
    } else if lo == 0.0 {
        1.0
    } else {
        0.1 * lo.abs()
    };
    (lo - pad, hi + pad)
}

/// A linear coordinate (in axis units) whose ticks are ours: few, at round values.
pub(crate) struct Ticked {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        let size = limit.1 - limit.0;
        if size == 0 || !f.is_finite() {
            return limit.1;
        }
        limit.0 + (f64::from(size) * f + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Pieces of a pixel polyline to stroke for a dash pattern.
pub(crate) fn dash_segments(points: &[(i32, i32)], dash: Dash) -> Vec<Vec<(i32, i32)>> {
    let (on, off) = match dash {
        Dash::Solid => return vec![points.to_vec()],
        Dash::Dashed => (10.0, 6.0),
        Dash::Dotted => (3.0, 4.0),
    };
    let mut out = Vec::new();
    let mut current: Vec<(i32, i32)> = Vec::new();
    // Position within the on/off cycle; the pattern runs on across the polyline's corners.
    let mut phase = 0.0f64;
    for w in points.windows(2) {
        let (a, b) = (
            (f64::from(w[0].0), f64::from(w[0].1)),
            (f64::from(w[1].0), f64::from(w[1].1)),
        );
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let at = |t: f64| {
            let f = t / len;
            (
                (a.0 + f * (b.0 - a.0)).round() as i32,
                (a.1 + f * (b.1 - a.1)).round() as i32,
            )
        };
        let mut t = 0.0;
        while t < len {
            if phase < on {
                let step = (on - phase).min(len - t);
                if current.is_empty() {
                    current.push(at(t));
                }
                current.push(at(t + step));
                t += step;
                phase += step;
                if phase >= on {
                    out.push(std::mem::take(&mut current));
                }
            } else {
                let step = (on + off - phase).min(len - t);
                t += step;
                phase += step;
                if phase >= on + off {
                    phase = 0.0;
                }
            }
        }
    }
    if current.len() > 1 {
        out.push(current);
    }
    out
}

/// Splits a polyline at non-finite points and clips it to the rectangle
/// `[x0, x1] x [y0, y1]` (Liang-Barsky per segment).
pub fn clip_polyline(points: &[(f64, f64)], x: (f64, f64), y: (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let inside = |p: (f64, f64)| p.0 >= x.0 && p.0 <= x.1 && p.1 >= y.0 && p.1 <= y.1;
    let flush = |current: &mut Vec<(f64, f64)>, out: &mut Vec<Vec<(f64, f64)>>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    if points.len() == 1 && finite(&points[0]) && inside(points[0]) {
        return vec![points.to_vec()];
    }
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        if !finite(&a) || !finite(&b) {
            flush(&mut current, &mut out);
            continue;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [
            (-dx, a.0 - x.0),
            (dx, x.1 - a.0),
            (-dy, a.1 - y.0),
            (dy, y.1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                    break;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            flush(&mut current, &mut out);
            continue;
        }
        let start = (a.0 + t0 * dx, a.1 + t0 * dy);
        let end = (a.0 + t1 * dx, a.1 + t1 * dy);
        if current.last() != Some(&start) {
            flush(&mut current, &mut out);
            current.push(start);
        }
        current.push(end);
        if t1 < 1.0 {
            flush(&mut current, &mut out);
        }
    }
    flush(&mut current, &mut out);
    out
}

/// The range of `values` as a fixed axis range (log axes: positive values only), padded.
pub fn shared_range<'a>(scale: Scale, values: impl Iterator<Item = &'a f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .copied()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return None;
    }
    Some(match scale {
        Scale::Log => (lo / 1.08, hi * 1.08),
        Scale::Linear if hi > lo => (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)),
        Scale::Linear => (lo - 0.5, hi + 0.5),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_few_and_labels_tidy() {
        let lin = Axis::linear("x");
        let shown: Vec<String> = ticks(&lin, 0.0, 1.0).into_iter().map(tick_label).collect();
        assert_eq!(shown, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        let t = ticks(&lin, -3.0, 1234.0);
        assert!(t.len() <= 7 && t.len() >= 3, "{t:?}");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(2_000_000.0), "2M");
        assert_eq!(tick_label(25_000.0), "25k");
        assert_eq!(tick_label(0.005), "0.005");
        assert_eq!(tick_label(-0.0), "0");
        let log = Axis::log("x");
        let shown: Vec<String> = ticks(&log, 2f64.log10(), 1000f64.log10())
            .into_iter()
            .map(|v| tick_label(log.value_at(v)))
            .collect();
        assert_eq!(shown, ["3", "10", "30", "100", "300", "1000"]);
        let shown: Vec<String> = ticks(&log, 0.0, 30f64.log10())
            .into_iter()
            .map(|v| tick_label(log.value_at(v)))
            .collect();
        assert_eq!(shown, ["1", "2", "5", "10", "20"]);
        // 1-2-5 would leave 2-4.6 bare: 1-2-3-5 labels the top.
        let shown: Vec<String> = ticks(&log, 0.4f64.log10(), 4.6f64.log10())
            .into_iter()
            .map(|v| tick_label(log.value_at(v)))
            .collect();
        assert_eq!(shown, ["0.5", "1", "2", "3"]);
    }

    #[test]
    fn lines_are_clipped_to_the_panel() {
        // A spike above the panel is cut at its top edge; a NaN breaks the line.
        let pts = [
            (0.0, 0.0),
            (1.0, 4.0),
            (2.0, 0.0),
            (3.0, f64::NAN),
            (4.0, 1.0),
            (5.0, 1.0),
        ];
        let pieces = clip_polyline(&pts, (0.0, 5.0), (0.0, 2.0));
        assert_eq!(pieces.len(), 3, "{pieces:?}");
        assert_eq!(pieces[0], vec![(0.0, 0.0), (0.5, 2.0)]);
        assert_eq!(pieces[1], vec![(1.5, 2.0), (2.0, 0.0)]);
        assert_eq!(pieces[2], vec![(4.0, 1.0), (5.0, 1.0)]);
        for p in pieces.iter().flatten() {
            assert!(p.1 <= 2.0 && p.1 >= 0.0);
        }
    }

    #[test]
    fn dashes_alternate() {
        let segs = dash_segments(&[(0, 0), (100, 0)], Dash::Dashed);
        assert!(segs.len() >= 6, "{segs:?}");
        assert_eq!(segs[0], vec![(0, 0), (10, 0)]);
        assert_eq!(segs[1][0], (16, 0));
        assert_eq!(dash_segments(&[(0, 0), (5, 5)], Dash::Solid).len(), 1);
    }
}
