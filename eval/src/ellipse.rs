//! The mean and covariance of 2-D samples, and their 1-sigma ellipse: the contour at one
//! Mahalanobis unit from the mean, `(p - mean)' cov^-1 (p - mean) = 1`, as the LEO study draws
//! each scheme's spread of operating points.

/// Mean and (population) covariance of a set of (x, y) samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gaussian2 {
    /// Mean (x, y).
    pub mean: (f64, f64),
    /// Covariance `[[var x, cov xy], [cov xy, var y]]`.
    pub cov: [[f64; 2]; 2],
}

impl Gaussian2 {
    /// The samples' mean and covariance; None without a finite sample.
    pub fn of(samples: &[(f64, f64)]) -> Option<Self> {
        let finite: Vec<(f64, f64)> = samples
            .iter()
            .copied()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        if finite.is_empty() {
            return None;
        }
        let n = finite.len() as f64;
        let mx = finite.iter().map(|p| p.0).sum::<f64>() / n;
        let my = finite.iter().map(|p| p.1).sum::<f64>() / n;
        let moment = |f: &dyn Fn(&(f64, f64)) -> f64| finite.iter().map(f).sum::<f64>() / n;
        let xx = moment(&|p| (p.0 - mx) * (p.0 - mx));
        let xy = moment(&|p| (p.0 - mx) * (p.1 - my));
        let yy = moment(&|p| (p.1 - my) * (p.1 - my));
        Some(Self {
            mean: (mx, my),
            cov: [[xx, xy], [xy, yy]],
        })
    }

    /// `points` points on the 1-sigma ellipse, closed (the first repeated at the end): the
    /// unit circle mapped through the covariance's Cholesky factor `L` (`cov = L L'`), so
    /// every point `p` has `(p - mean)' cov^-1 (p - mean) = 1`. A degenerate spread (a line or
    /// a point) gives the segment or the point it collapses to.
    pub fn one_sigma_ellipse(&self, points: usize) -> Vec<(f64, f64)> {
        let [[xx, xy], [_, yy]] = self.cov;
        let l11 = xx.max(0.0).sqrt();
        let l21 = if l11 > 0.0 { xy / l11 } else { 0.0 };
        let l22 = (yy - l21 * l21).max(0.0).sqrt();
        let n = points.max(3);
        (0..=n)
            .map(|k| {
                let t = std::f64::consts::TAU * k as f64 / n as f64;
                let (c, s) = (t.cos(), t.sin());
                (self.mean.0 + l11 * c, self.mean.1 + l21 * c + l22 * s)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_covariance_by_hand() {
        // (0,0), (2,0), (0,2), (2,2): mean (1,1), variances 1, no covariance.
        let g = Gaussian2::of(&[(0.0, 0.0), (2.0, 0.0), (0.0, 2.0), (2.0, 2.0)]).unwrap();
        assert_eq!(g.mean, (1.0, 1.0));
        assert_eq!(g.cov, [[1.0, 0.0], [0.0, 1.0]]);
        // On a line y = x: covariance equals the variances.
        let g = Gaussian2::of(&[(1.0, 1.0), (3.0, 3.0), (f64::NAN, 0.0)]).unwrap();
        assert_eq!(g.cov, [[1.0, 1.0], [1.0, 1.0]]);
        assert_eq!(Gaussian2::of(&[]), None);
        assert_eq!(Gaussian2::of(&[(f64::INFINITY, 1.0)]), None);
    }

    #[test]
    fn every_ellipse_point_is_one_mahalanobis_unit_out() {
        let g = Gaussian2 {
            mean: (1.2, 0.9),
            cov: [[0.04, 0.012], [0.012, 0.01]],
        };
        let [[a, b], [_, d]] = g.cov;
        let det = a * d - b * b;
        let pts = g.one_sigma_ellipse(36);
        assert_eq!(pts.len(), 37);
        assert_eq!(pts[0], pts[36]);
        for (x, y) in pts {
            let (dx, dy) = (x - g.mean.0, y - g.mean.1);
            let m = (d * dx * dx - 2.0 * b * dx * dy + a * dy * dy) / det;
            assert!((m - 1.0).abs() < 1e-9, "{m}");
        }
        // Axis-aligned: the extremes are the standard deviations.
        let g = Gaussian2 {
            mean: (0.0, 0.0),
            cov: [[4.0, 0.0], [0.0, 0.25]],
        };
        let pts = g.one_sigma_ellipse(4);
        assert!((pts[0].0 - 2.0).abs() < 1e-12 && pts[0].1.abs() < 1e-12);
        assert!(pts[1].0.abs() < 1e-12 && (pts[1].1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_degenerate_spread_collapses_to_its_segment() {
        let g = Gaussian2::of(&[(1.0, 1.0), (3.0, 3.0)]).unwrap();
        for (x, y) in g.one_sigma_ellipse(8) {
            assert!((x - y).abs() < 1e-12 && (1.0..=3.0).contains(&x));
        }
        let g = Gaussian2::of(&[(2.0, 5.0)]).unwrap();
        assert!(g.one_sigma_ellipse(8).iter().all(|&p| p == (2.0, 5.0)));
    }
}
